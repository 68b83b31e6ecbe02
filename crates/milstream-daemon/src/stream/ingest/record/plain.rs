//! The fast path for point messages: a derived decoder that accepts only plainly valid
//! points (a strict subset of what the hand-written path accepts, with the same result).

use std::sync::Arc;

use serde::Deserialize;

use super::{Point, MAX_TS_MS, MIN_TS_MS};

/// A point in its plainest form: `series_id` a non-empty string, `ts` an integer, `value` a
/// number; other fields ignored, as the hand-written path ignores them.
#[derive(Deserialize)]
struct PlainPoint<'a> {
    #[serde(borrow)]
    series_id: std::borrow::Cow<'a, str>,
    ts: i64,
    value: f64,
    /// Present means "both value and values", which the hand-written path rejects.
    #[serde(default)]
    values: Option<serde::de::IgnoredAny>,
    /// A string or absent/null here; anything else takes the hand-written path (which
    /// rejects it).
    #[serde(default, borrow)]
    model: Option<std::borrow::Cow<'a, str>>,
}

/// The fast path for point messages: Some only if the payload is one plain point or an array
/// of them, which the hand-written path would decode to the same points. An id or model name
/// over `max_id_bytes` is not plain: it is measured here, borrowed from the payload, before
/// any copy of it is made, and the hand-written path rejects it (`too_large`).
pub(super) fn decode_plain_points(payload: &[u8], max_id_bytes: usize) -> Option<Vec<Point>> {
    let first = payload.iter().find(|b| !b.is_ascii_whitespace())?;
    let plain: Vec<PlainPoint<'_>> = match first {
        b'{' => vec![serde_json::from_slice::<PlainPoint<'_>>(payload).ok()?],
        b'[' => serde_json::from_slice(payload).ok()?,
        _ => return None,
    };
    // The points of an array are mostly one series': they share one id.
    let mut last: Option<Arc<str>> = None;
    plain
        .into_iter()
        .map(|p| {
            let plain = !p.series_id.is_empty()
                && p.series_id.len() <= max_id_bytes
                && (MIN_TS_MS..=MAX_TS_MS).contains(&p.ts)
                && p.values.is_none()
                && p.value.is_finite()
                && p.model
                    .as_ref()
                    .is_none_or(|m| !m.is_empty() && m.len() <= max_id_bytes);
            if !plain {
                return None;
            }
            let series_id = match &last {
                Some(id) if **id == *p.series_id => id.clone(),
                _ => last.insert(Arc::from(&*p.series_id)).clone(),
            };
            Some(Point {
                series_id,
                ts_ms: p.ts,
                value: p.value,
                rest: Vec::new(),
                model: p.model.map(std::borrow::Cow::into_owned),
            })
        })
        .collect()
}
