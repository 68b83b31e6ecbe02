//! The fast path for Protobuf points, as `avro/plain.rs` is for Avro: the points of a
//! message read straight from its bytes (prost's wire primitives, guided by the resolved
//! field numbers) when every one is plainly valid, a strict subset of what the general path
//! accepts, with the same result, and without a `DynamicMessage` or a JSON value between.
//! Anything else, good or bad (`values`, a NaN, an unusual integer encoding, a group),
//! takes the general path. Fields of other numbers are skipped, as the general path drops
//! them.

use std::sync::Arc;

use prost::encoding::{decode_key, decode_varint, WireType};
use prost_reflect::Kind;

use super::reader::{Mapped, Resolved};
use crate::stream::ingest::record::{Point, MAX_TS_MS, MIN_TS_MS};

/// One field's value on the wire.
enum Raw<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(&'a [u8]),
}

/// Takes the next field's value off `buf` (None: a group, or too few bytes).
fn raw<'a>(buf: &mut &'a [u8], wire: WireType) -> Option<Raw<'a>> {
    let take = |buf: &mut &'a [u8], n: usize| -> Option<&'a [u8]> {
        let (head, tail) = buf.split_at_checked(n)?;
        *buf = tail;
        Some(head)
    };
    Some(match wire {
        WireType::Varint => Raw::Varint(decode_varint(buf).ok()?),
        WireType::SixtyFourBit => Raw::Fixed64(take(buf, 8)?.try_into().ok()?),
        WireType::ThirtyTwoBit => Raw::Fixed32(take(buf, 4)?.try_into().ok()?),
        WireType::LengthDelimited => {
            let n = usize::try_from(decode_varint(buf).ok()?).ok()?;
            Raw::Bytes(take(buf, n)?)
        }
        WireType::StartGroup | WireType::EndGroup => return None,
    })
}

/// Some only if the message is one plain point or a batch of them (and nothing else).
pub(super) fn plain_points(
    resolved: &Resolved,
    message: &[u8],
    max_id_bytes: usize,
) -> Option<Vec<Point>> {
    let mut last: Option<Arc<str>> = None;
    let Some(batch) = &resolved.batch else {
        return Some(vec![point(
            message,
            &resolved.fields,
            max_id_bytes,
            &mut last,
        )?]);
    };
    let batch = batch.number();
    let mut out = Vec::new();
    let mut buf = message;
    while !buf.is_empty() {
        let (number, wire) = decode_key(&mut buf).ok()?;
        let value = raw(&mut buf, wire)?;
        match (number == batch, value) {
            (true, Raw::Bytes(bytes)) => {
                out.push(point(bytes, &resolved.fields, max_id_bytes, &mut last)?);
            }
            (true, _) => return None,
            (false, _) => {}
        }
    }
    Some(out)
}

/// One point, if plain: a non-empty `series_id` and a `model` (if any) within
/// `max_id_bytes`, `ts` in range, a finite `value`, no `values`. A field without presence
/// that was not sent has its default, as on the general path.
fn point(
    mut buf: &[u8],
    fields: &[Mapped],
    max_id_bytes: usize,
    last: &mut Option<Arc<str>>,
) -> Option<Point> {
    let (mut id, mut ts, mut value, mut model) = (None, None, None, None);
    while !buf.is_empty() {
        let (number, wire) = decode_key(&mut buf).ok()?;
        let raw = raw(&mut buf, wire)?;
        let Some(m) = fields.iter().find(|m| m.number == number) else {
            continue;
        };
        match (m.name.as_str(), &m.kind, raw) {
            ("series_id", Kind::String, Raw::Bytes(b)) => id = Some(std::str::from_utf8(b).ok()?),
            ("model", Kind::String, Raw::Bytes(b)) => model = Some(std::str::from_utf8(b).ok()?),
            // prost reads int32 and uint32 by truncating the varint: so does this.
            ("ts", Kind::Int64, Raw::Varint(v)) => ts = Some(v as i64),
            ("ts", Kind::Int32, Raw::Varint(v)) => ts = Some(i64::from(v as i32)),
            ("ts", Kind::Uint32, Raw::Varint(v)) => ts = Some(i64::from(v as u32)),
            ("value", Kind::Double, Raw::Fixed64(b)) => value = Some(f64::from_le_bytes(b)),
            ("value", Kind::Float, Raw::Fixed32(b)) => {
                value = Some(f64::from(f32::from_le_bytes(b)))
            }
            _ => return None,
        }
    }
    // What was not sent: absent if the field has presence (or is not the writer's), else
    // its default.
    let implicit = |name: &str| fields.iter().any(|m| m.name == name && !m.presence);
    let id = id.or_else(|| implicit("series_id").then_some(""))?;
    let ts = ts.or_else(|| implicit("ts").then_some(0))?;
    let value = value.or_else(|| implicit("value").then_some(0.0))?;
    let model = model.or_else(|| implicit("model").then_some(""));
    let plain = !id.is_empty()
        && id.len() <= max_id_bytes
        && (MIN_TS_MS..=MAX_TS_MS).contains(&ts)
        && value.is_finite()
        && model.is_none_or(|m: &str| !m.is_empty() && m.len() <= max_id_bytes);
    if !plain {
        return None;
    }
    // The points of a batch are mostly one series': they share one id.
    let series_id = match last {
        Some(known) if **known == *id => known.clone(),
        _ => last.insert(Arc::from(id)).clone(),
    };
    Some(Point {
        series_id,
        ts_ms: ts,
        value,
        rest: Vec::new(),
        model: model.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::encode;
    use super::super::reader::{ProtoSchema, POINT_PROTO};
    use super::*;
    use crate::stream::ingest::record::{decode as decode_json, DecodeLimits, Record, RecordKind};

    /// Plain points take the fast path and give the JSON path's points; anything else
    /// declines (the general path, tested in `mod.rs`, takes it).
    #[test]
    fn plain_points_are_the_json_paths_and_others_decline() {
        let limits = DecodeLimits {
            max_message_bytes: 4096,
            max_bag_instances: 4,
            max_id_bytes: 8,
        };
        let schema = ProtoSchema::new(1, POINT_PROTO).unwrap();
        let body = |json: &serde_json::Value| {
            let b = encode::body(RecordKind::Point, json);
            // Skip the indexes: [0] is one byte, [1] two.
            b[if json.is_array() { 2 } else { 1 }..].to_vec()
        };
        let fast = |json: serde_json::Value| {
            let ix: &[i32] = if json.is_array() { &[1] } else { &[0] };
            let resolved = schema.resolved(ix, RecordKind::Point).unwrap();
            plain_points(resolved, &body(&json), limits.max_id_bytes)
        };
        for json in [
            json!({"series_id": "a", "ts": 1, "value": 0.5, "model": "m"}),
            json!({"series_id": "a", "ts": -5, "value": 0.0}),
            json!([{"series_id": "a", "ts": 1, "value": 0.5},
                   {"series_id": "a", "ts": 2, "value": 1.5},
                   {"series_id": "b", "ts": 3, "value": 2.5}]),
            json!([]),
        ] {
            let want: Vec<Record> =
                decode_json(RecordKind::Point, json.to_string().as_bytes(), &limits)
                    .into_iter()
                    .map(Result::unwrap)
                    .collect();
            let got: Vec<Record> = fast(json.clone())
                .unwrap_or_else(|| panic!("{json} is plain"))
                .into_iter()
                .map(Record::Point)
                .collect();
            assert_eq!(got, want, "{json}");
        }
        for json in [
            json!({"series_id": "a", "ts": 1, "values": [1.0, 2.0]}),
            json!({"series_id": "a", "ts": 1}),
            json!({"series_id": "", "ts": 1, "value": 1.0}),
            json!({"series_id": "123456789", "ts": 1, "value": 1.0}),
            json!([{"series_id": "a", "ts": 1, "value": 1.0}, {"ts": 2, "value": 1.0}]),
        ] {
            assert!(fast(json.clone()).is_none(), "{json}");
        }
    }
}
