//! Avro input in the Confluent wire format: a zero byte, the writer schema's id in the
//! schema registry (4 bytes, big-endian), then one binary Avro datum: a record of the
//! topic's kind or an array of them. The datum is read with the writer's schema, mapped
//! onto ours (`schemas/*.avsc`, [`reader`]) and handed to the JSON path's record rules as a
//! JSON value, so an Avro record gives exactly the record (or rejection) its JSON form does.
//! Plain points skip the JSON value (`plain`), as plain JSON points do.
//!
//! Dead letters: a payload that is not the wire format, or whose datum is truncated or
//! malformed, is `parse`; a schema id the registry does not have (or could not give), or a
//! schema that does not carry milstream's fields, is `schema`.

mod datum;
pub mod encode;
mod plain;
pub(crate) mod reader;
mod schema;

pub use reader::{BAG_AVSC, LABEL_AVSC, POINT_AVSC};

use datum::Reader;

use super::record::{decode_value, DeadReason, DecodeLimits, Record, RecordKind, Rejected};
use super::registry::wire::unframe;
use super::registry::{SchemaRegistry, SchemaType, WriterSchema};

/// Decodes one Avro message of a `kind` topic, as [`super::record::decode`] does a JSON one:
/// every record of an array on its own, bad ones as `Err` with their reason.
pub fn decode(
    kind: RecordKind,
    payload: &[u8],
    limits: &DecodeLimits,
    registry: &SchemaRegistry,
) -> Vec<Result<Record, Rejected>> {
    match value(kind, payload, limits, registry) {
        Ok(Decoded::Points(points)) => points.into_iter().map(|p| Ok(Record::Point(p))).collect(),
        Ok(Decoded::Value(value, non_finite)) => decode_value(kind, value, limits, non_finite),
        Err(rejected) => vec![Err(rejected)],
    }
}

/// A message read: plain points (the fast path), or the JSON value of its records with
/// whether it holds non-finite markers.
enum Decoded {
    Points(Vec<super::record::Point>),
    Value(serde_json::Value, bool),
}

/// The message as the JSON value its records' JSON form would parse to.
fn value(
    kind: RecordKind,
    payload: &[u8],
    limits: &DecodeLimits,
    registry: &SchemaRegistry,
) -> Result<Decoded, Rejected> {
    let (id, datum) = unframe(payload, limits)?;
    let writer = registry.ready(id)?;
    let WriterSchema::Avro(schema) = &*writer else {
        return Err(writer.other_type(id, SchemaType::Avro));
    };
    let resolved = schema
        .resolved(kind)
        .as_ref()
        .map_err(|e| Rejected::new(DeadReason::Schema, format!("schema id {id}: {e}")))?;
    if kind == RecordKind::Point {
        if let Some(points) = plain::plain_points(resolved, datum, limits.max_id_bytes) {
            return Ok(Decoded::Points(points));
        }
    }
    let mut reader = Reader::new(datum);
    let parse =
        |e: String| Rejected::new(DeadReason::Parse, format!("Avro of schema id {id}: {e}"));
    let value = if resolved.many {
        reader.records(&resolved.record, &resolved.names)
    } else {
        reader.record(&resolved.record, &resolved.names)
    }
    .map_err(parse)?;
    if reader.remaining() > 0 {
        return Err(parse(format!(
            "{} bytes after the end of the datum",
            reader.remaining()
        )));
    }
    Ok(Decoded::Value(value, reader.non_finite))
}

#[cfg(test)]
mod tests {
    use super::encode::{double, long, string};
    use super::*;
    use crate::stream::ingest::record::decode as decode_json;
    use crate::stream::ingest::registry::wire::frame;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_message_bytes: 4096,
        max_bag_instances: 4,
        max_id_bytes: 8,
    };

    /// Ids 1-3: our point, bag and label schemas; 4: a point schema without `ts`.
    fn registry() -> SchemaRegistry {
        let r = SchemaRegistry::offline(8);
        r.insert(1, SchemaType::Avro, POINT_AVSC).unwrap();
        r.insert(2, SchemaType::Avro, BAG_AVSC).unwrap();
        r.insert(3, SchemaType::Avro, LABEL_AVSC).unwrap();
        let no_ts = r#"{"type":"record","name":"P","fields":[{"name":"series_id","type":"string"},{"name":"value","type":"double"}]}"#;
        r.insert(4, SchemaType::Avro, no_ts).unwrap();
        r
    }

    /// A point of schema 1: `value` (union branch 1), no `values`, `model` if given.
    fn point(id: &str, ts: i64, value: f64, model: Option<&str>) -> Vec<u8> {
        let mut d = Vec::new();
        string(&mut d, id);
        long(&mut d, ts);
        long(&mut d, 1);
        double(&mut d, value);
        long(&mut d, 0);
        match model {
            Some(m) => {
                long(&mut d, 1);
                string(&mut d, m);
            }
            None => long(&mut d, 0),
        }
        frame(1, &d)
    }

    fn same_as_json(kind: RecordKind, avro: &[u8], json: &str) {
        let want = decode_json(kind, json.as_bytes(), &LIMITS);
        assert_eq!(decode(kind, avro, &LIMITS, &registry()), want, "{json}");
    }

    fn rejected(kind: RecordKind, avro: &[u8], reason: DeadReason, needle: &str) {
        match decode(kind, avro, &LIMITS, &registry()).as_slice() {
            [Err(r)] if r.reason == reason && r.detail.contains(needle) => {}
            other => panic!("wanted {reason} with {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn records_decode_as_their_json_form() {
        same_as_json(
            RecordKind::Point,
            &point("pump-7", 1_732_550_400_123, 0.53, Some("fans")),
            r#"{"series_id":"pump-7","ts":1732550400123,"value":0.53,"model":"fans"}"#,
        );
        // Rules of the JSON path apply: a NaN, an id too long, a too large model name.
        same_as_json(
            RecordKind::Point,
            &point("a", 1, f64::NAN, None),
            r#"{"series_id":"a","ts":1,"value":NaN}"#,
        );
        same_as_json(
            RecordKind::Point,
            &point("123456789", 1, 0.5, None),
            r#"{"series_id":"123456789","ts":1,"value":0.5}"#,
        );
        // A bag: two instances of two values.
        let mut d = Vec::new();
        string(&mut d, "mol-1");
        long(&mut d, 2);
        for inst in [[1.0, 2.0], [3.0, 4.5]] {
            long(&mut d, 2);
            inst.iter().for_each(|v| double(&mut d, *v));
            long(&mut d, 0);
        }
        long(&mut d, 0);
        long(&mut d, 1);
        string(&mut d, "active");
        long(&mut d, 0);
        same_as_json(
            RecordKind::Bag,
            &frame(2, &d),
            r#"{"bag_id":"mol-1","instances":[[1,2],[3,4.5]],"label":"active"}"#,
        );
        // A segment label: series_id, start, end set; bag_id and model null.
        let mut d = Vec::new();
        long(&mut d, 1); // series_id
        string(&mut d, "s");
        long(&mut d, 1); // start
        long(&mut d, 1000);
        long(&mut d, 1); // end
        long(&mut d, 2000);
        long(&mut d, 0); // bag_id: null
        string(&mut d, "walk");
        long(&mut d, 0); // model: null
        same_as_json(
            RecordKind::Label,
            &frame(3, &d),
            r#"{"series_id":"s","start":1000,"end":2000,"label":"walk"}"#,
        );
    }

    /// An evolved writer (a renamed field with its alias, an int `ts`, a new field) and an
    /// array per message: the fast path's points, and the general path's when one is not
    /// plain, are those of the JSON form.
    #[test]
    fn evolved_arrays_decode_as_their_json_form_on_both_paths() {
        let r = registry();
        let evolved = r#"{"type":"array","items":{"type":"record","name":"P2","fields":[
            {"name":"site","type":"string"},
            {"name":"device","type":"string","aliases":["series_id"]},
            {"name":"ts","type":"int"},
            {"name":"value","type":["null","double"]}]}}"#;
        r.insert(5, SchemaType::Avro, evolved).unwrap();
        for second in [2.5, f64::INFINITY] {
            let mut d = Vec::new();
            long(&mut d, 2);
            for (id, ts, v) in [("a", 7, 0.5), ("a", 8, second)] {
                string(&mut d, "plant-1");
                string(&mut d, id);
                long(&mut d, ts);
                long(&mut d, 1);
                double(&mut d, v);
            }
            long(&mut d, 0);
            let json = format!(
                r#"[{{"series_id":"a","ts":7,"value":0.5}},{{"series_id":"a","ts":8,"value":{}}}]"#,
                if second.is_finite() {
                    "2.5"
                } else {
                    "Infinity"
                }
            );
            let want = decode_json(RecordKind::Point, json.as_bytes(), &LIMITS);
            assert_eq!(decode(RecordKind::Point, &frame(5, &d), &LIMITS, &r), want);
        }
    }

    #[test]
    fn broken_messages_are_dead_letters_with_reasons() {
        use DeadReason::*;
        let good = point("a", 1, 0.5, None);
        rejected(
            RecordKind::Point,
            &good[..good.len() - 3],
            Parse,
            "truncated",
        );
        let mut trailing = good.clone();
        trailing.push(0);
        rejected(RecordKind::Point, &trailing, Parse, "1 bytes after");
        rejected(
            RecordKind::Point,
            br#"{"series_id":"a"}"#,
            Parse,
            "wire format",
        );
        let mut unknown = good.clone();
        unknown[1..5].copy_from_slice(&77u32.to_be_bytes());
        rejected(
            RecordKind::Point,
            &unknown,
            Schema,
            "schema id 77 is not known",
        );
        let mut no_ts = Vec::new();
        string(&mut no_ts, "a");
        double(&mut no_ts, 0.5);
        rejected(
            RecordKind::Point,
            &frame(4, &no_ts),
            Schema,
            "no field `ts`",
        );
        // A point schema on the bags topic.
        rejected(RecordKind::Bag, &good, Schema, "no field `bag_id`");
        rejected(RecordKind::Point, &vec![0; 5000], Oversized, "4096");
        // A bag whose instances claim 2^40 items: refused before any allocation.
        let mut huge = Vec::new();
        string(&mut huge, "b");
        long(&mut huge, 1 << 40);
        rejected(RecordKind::Bag, &frame(2, &huge), Parse, "truncated");
    }
}
