//! Bounds a well-formed record must also keep: ids no longer than `limits.max_id_bytes`,
//! and event times no further ahead of their message's arrival than
//! `limits.max_future_skew_ms`. What breaks them is a dead letter, never a larger
//! allocation or a clock that one device can move.

use super::{DeadReason, DecodeLimits, Decoder, Record, Rejected};
use crate::config::LimitsConfig;

impl From<&LimitsConfig> for DecodeLimits {
    fn from(l: &LimitsConfig) -> Self {
        Self {
            max_message_bytes: l.max_message_bytes,
            max_bag_instances: l.max_bag_instances,
            max_id_bytes: l.max_id_bytes,
        }
    }
}

impl Decoder<'_> {
    /// `s` (the value of `field`: an id, a model name or a class) if it is no longer than
    /// `max_id_bytes`. Each kept id is copied into windows, the label-join history and every
    /// output row, so its length bounds what one record can make the daemon hold.
    pub(super) fn short(&self, s: String, field: &str) -> Result<String, Rejected> {
        let max = self.limits.max_id_bytes;
        if s.len() <= max {
            return Ok(s);
        }
        Err(Rejected::new(
            DeadReason::TooLarge,
            format!(
                "`{field}` is {} bytes, more than limits.max_id_bytes = {max}",
                s.len()
            ),
        ))
    }
}

/// Turns each decoded point whose event time is more than `max_skew_ms` past `arrival_ms`
/// into a `future` rejection, in place (other records and rejections stay as they are).
///
/// `arrival_ms` is the message's Kafka timestamp, capped at the wall clock when it is
/// consumed: for a producer with a sane clock that is a function of the message alone, so
/// a replay decides the same. A point past it cannot have been measured yet; kept, it would
/// hold its series (every later, correct point `late`) and the partition's replay point
/// until the clock caught up.
pub fn reject_future(results: &mut [Result<Record, Rejected>], arrival_ms: i64, max_skew_ms: i64) {
    let limit = arrival_ms.saturating_add(max_skew_ms);
    let element = results.len() > 1;
    for (i, r) in results.iter_mut().enumerate() {
        let Ok(Record::Point(p)) = r else { continue };
        if p.ts_ms <= limit {
            continue;
        }
        let rej = Rejected::new(
            DeadReason::Future,
            format!(
                "point of series '{}' at ts {} is {} ms past its message's arrival at {arrival_ms} (limits.max_future_skew_ms = {max_skew_ms})",
                p.series_id,
                p.ts_ms,
                p.ts_ms.saturating_sub(arrival_ms)
            ),
        );
        *r = Err(if element { rej.at_element(i) } else { rej });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{decode, DecodeLimits, RecordKind};
    use super::*;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_message_bytes: 1 << 20,
        max_bag_instances: 10,
        max_id_bytes: 8,
    };

    fn reasons(kind: RecordKind, payload: &str) -> Vec<Option<DeadReason>> {
        decode(kind, payload.as_bytes(), &LIMITS)
            .into_iter()
            .map(|r| r.err().map(|e| e.reason))
            .collect()
    }

    /// Finding 3 (ids without bounds): an id, model name or class longer than
    /// `max_id_bytes` is a `too_large` dead letter on every path that decodes one (the
    /// points' fast path, the hand-written path, bags and both forms of label), and one
    /// at the bound is accepted. At 593c8e9 there was no bound: every one decoded.
    #[test]
    fn ids_longer_than_the_bound_are_too_large() {
        let long = "x".repeat(9);
        let ok = "y".repeat(8);
        let too_large = Some(DeadReason::TooLarge);
        let cases = [
            (
                RecordKind::Point,
                format!(r#"{{"series_id":"{long}","ts":1,"value":1}}"#),
            ),
            (
                RecordKind::Point,
                format!(r#"{{"series_id":"{long}","ts":1,"values":[1]}}"#),
            ),
            (
                RecordKind::Point,
                format!(r#"{{"series_id":"a","ts":1,"value":1,"model":"{long}"}}"#),
            ),
            (
                RecordKind::Bag,
                format!(r#"{{"bag_id":"{long}","instances":[[1]]}}"#),
            ),
            (
                RecordKind::Bag,
                format!(r#"{{"bag_id":"b","instances":[[1]],"label":"{long}"}}"#),
            ),
            (
                RecordKind::Label,
                format!(r#"{{"series_id":"{long}","start":1,"end":2,"label":"a"}}"#),
            ),
            (
                RecordKind::Label,
                format!(r#"{{"bag_id":"{long}","label":"a"}}"#),
            ),
            (
                RecordKind::Label,
                format!(r#"{{"bag_id":"b","label":"{long}"}}"#),
            ),
        ];
        for (kind, payload) in &cases {
            assert_eq!(reasons(*kind, payload), [too_large], "{payload}");
        }
        let fine = format!(
            r#"[{{"series_id":"{ok}","ts":1,"value":1}},{{"series_id":"{long}","ts":2,"value":1}}]"#
        );
        assert_eq!(reasons(RecordKind::Point, &fine), [None, too_large]);
        let r = decode(RecordKind::Point, fine.as_bytes(), &LIMITS);
        let detail = &r[1].as_ref().unwrap_err().detail;
        assert!(detail.contains("`series_id` is 9 bytes"), "{detail}");
    }

    /// Finding 2 (one future timestamp moves the clock): a point more than the skew past
    /// its message's arrival is a `future` rejection naming the bound; one at the bound and
    /// other records stay. At 593c8e9 nothing compared event time with arrival.
    #[test]
    fn points_past_the_arrival_and_skew_are_future() {
        let payload =
            r#"[{"series_id":"a","ts":1000,"value":1},{"series_id":"a","ts":1001,"value":1},"x"]"#;
        let mut r = decode(RecordKind::Point, payload.as_bytes(), &LIMITS);
        reject_future(&mut r, 900, 100);
        assert!(matches!(r[0], Ok(Record::Point(_))));
        let e = r[1].as_ref().unwrap_err();
        assert_eq!(e.reason, DeadReason::Future);
        assert!(e.detail.starts_with("element 1: "), "{}", e.detail);
        assert!(
            e.detail.contains("max_future_skew_ms = 100"),
            "{}",
            e.detail
        );
        assert_eq!(r[2].as_ref().unwrap_err().reason, DeadReason::Schema);
    }
}
