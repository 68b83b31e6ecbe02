//! The fast path for Avro points, as `record/plain.rs` is for JSON: the points of a message
//! read straight from the datum when every one is plainly valid (a strict subset of what
//! the general path accepts, with the same result), without a JSON value between. Anything
//! else, good or bad, takes the general path.

use std::sync::Arc;

use super::datum::Reader;
use super::reader::Resolved;
use super::schema::Schema;
use crate::stream::ingest::record::{Point, MAX_TS_MS, MIN_TS_MS};

/// A field's value as the fast path takes it.
enum Plain<'a> {
    Null,
    Str(&'a str),
    Long(i64),
    Double(f64),
}

/// Some only if the datum is one plain point or an array of them (and nothing after).
pub(super) fn plain_points(
    resolved: &Resolved,
    datum: &[u8],
    max_id_bytes: usize,
) -> Option<Vec<Point>> {
    let mut r = Reader::new(datum);
    let mut last: Option<Arc<str>> = None;
    let mut out = Vec::new();
    if resolved.many {
        loop {
            let n = r.block().ok()?;
            if n == 0 {
                break;
            }
            for _ in 0..n {
                out.push(point(&mut r, resolved, max_id_bytes, &mut last)?);
            }
        }
    } else {
        out.push(point(&mut r, resolved, max_id_bytes, &mut last)?);
    }
    (r.remaining() == 0).then_some(out)
}

fn read<'a>(r: &mut Reader<'a>, schema: &Schema) -> Option<Plain<'a>> {
    match schema {
        Schema::Null => Some(Plain::Null),
        Schema::String => r.str_ref().ok().map(Plain::Str),
        Schema::Long { micros: false } => r.long().ok().map(Plain::Long),
        Schema::Int => r
            .long()
            .ok()
            .filter(|v| i32::try_from(*v).is_ok())
            .map(Plain::Long),
        Schema::Double => r.double().ok().map(Plain::Double),
        Schema::Union(branches) => {
            let i = usize::try_from(r.long().ok()?).ok()?;
            read(r, branches.get(i)?)
        }
        _ => None,
    }
}

/// One point, if plain: a non-empty `series_id` and a `model` (if any) within
/// `max_id_bytes`, `ts` in range, a finite `value`, no `values`.
fn point(
    r: &mut Reader<'_>,
    resolved: &Resolved,
    max_id_bytes: usize,
    last: &mut Option<Arc<str>>,
) -> Option<Point> {
    let (mut id, mut ts, mut value, mut model) = (None, None, None, None);
    for (f, name) in resolved.record.fields.iter().zip(&resolved.names) {
        match (name.as_deref(), read(r, &f.schema)?) {
            (None, _) | (Some("value" | "values" | "model"), Plain::Null) => {}
            (Some("series_id"), Plain::Str(s)) => id = Some(s),
            (Some("ts"), Plain::Long(t)) => ts = Some(t),
            (Some("value"), Plain::Double(v)) => value = Some(v),
            (Some("model"), Plain::Str(m)) => model = Some(m),
            _ => return None,
        }
    }
    let (id, ts, value) = (id?, ts?, value?);
    let plain = !id.is_empty()
        && id.len() <= max_id_bytes
        && (MIN_TS_MS..=MAX_TS_MS).contains(&ts)
        && value.is_finite()
        && model.is_none_or(|m: &str| !m.is_empty() && m.len() <= max_id_bytes);
    if !plain {
        return None;
    }
    // The points of an array are mostly one series': they share one id.
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
