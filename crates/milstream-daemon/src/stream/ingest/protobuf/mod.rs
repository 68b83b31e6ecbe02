//! Protobuf input in the Confluent wire format: a zero byte, the writer schema's id in the
//! schema registry (4 bytes, big-endian), the message indexes (`indexes`: which message of
//! the schema's file), then the protobuf-encoded message: a record of the topic's kind or a
//! batch of them. The registry's schema text is compiled at run time (`descriptor`: protox,
//! no protoc), the message decoded against the writer's descriptor (prost-reflect's
//! `DynamicMessage`), mapped onto ours by field number (`schemas/*.proto`, [`reader`]) and
//! handed to the JSON path's record rules as a JSON value (`value`), so a Protobuf record
//! gives exactly the record (or rejection) its JSON form does. Plain points skip the
//! `DynamicMessage` and the JSON value (`plain`), as plain JSON and Avro points do.
//!
//! Dead letters, as for Avro: a payload that is not the wire format, message indexes or a
//! message that are truncated or malformed, is `parse`; a schema id the registry does not
//! have (or could not give), a schema of another type, message indexes that name no message
//! of the schema, or a message that does not carry milstream's fields, is `schema`.
//!
//! Bounded: prost checks every length against the bytes left and allocates nothing ahead
//! from one; a decoded message holds at most some tens of bytes per byte of the message
//! (a list of one-byte numbers), so what a message makes the daemon hold stays bounded by
//! `limits.max_message_bytes`, as for JSON and Avro.

mod descriptor;
pub mod encode;
mod indexes;
mod plain;
pub(crate) mod reader;
mod value;

pub use reader::{BAG_PROTO, LABEL_PROTO, POINT_PROTO};

use prost_reflect::DynamicMessage;

use super::record::{decode_value, DeadReason, DecodeLimits, Record, RecordKind, Rejected};
use super::registry::wire::unframe;
use super::registry::{SchemaRegistry, SchemaType, WriterSchema};

/// Decodes one Protobuf message of a `kind` topic, as [`super::record::decode`] does a JSON
/// one: every record of a batch on its own, bad ones as `Err` with their reason.
pub fn decode(
    kind: RecordKind,
    payload: &[u8],
    limits: &DecodeLimits,
    registry: &SchemaRegistry,
) -> Vec<Result<Record, Rejected>> {
    match read(kind, payload, limits, registry) {
        Ok(Decoded::Points(points)) => points.into_iter().map(|p| Ok(Record::Point(p))).collect(),
        Ok(Decoded::Value(value, non_finite)) => decode_value(kind, value, limits, non_finite),
        Err(rejected) => vec![Err(rejected)],
    }
}

/// A message read: plain points (the fast path), or the JSON value its records' JSON form
/// would parse to, with whether it holds non-finite markers.
enum Decoded {
    Points(Vec<super::record::Point>),
    Value(serde_json::Value, bool),
}

fn read(
    kind: RecordKind,
    payload: &[u8],
    limits: &DecodeLimits,
    registry: &SchemaRegistry,
) -> Result<Decoded, Rejected> {
    let (id, body) = unframe(payload, limits)?;
    let parse = |e: String| {
        Rejected::new(
            DeadReason::Parse,
            format!("Protobuf of schema id {id}: {e}"),
        )
    };
    // The schema first, as for Avro: an unknown id is `schema` whatever its bytes are.
    let writer = registry.ready(id)?;
    let WriterSchema::Protobuf(schema) = &*writer else {
        return Err(writer.other_type(id, SchemaType::Protobuf));
    };
    let (indexes, message) = indexes::read(body).map_err(parse)?;
    let resolved = schema
        .resolved(indexes.as_slice(), kind)
        .map_err(|e| Rejected::new(DeadReason::Schema, format!("schema id {id}: {e}")))?;
    if kind == RecordKind::Point {
        if let Some(points) = plain::plain_points(resolved, message, limits.max_id_bytes) {
            return Ok(Decoded::Points(points));
        }
    }
    let decoded = DynamicMessage::decode(resolved.message.clone(), message)
        .map_err(|e| parse(e.to_string()))?;
    let (value, non_finite) = value::records(&decoded, resolved);
    Ok(Decoded::Value(value, non_finite))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::stream::ingest::avro::POINT_AVSC;
    use crate::stream::ingest::record::decode as decode_json;
    use crate::stream::ingest::registry::wire::frame;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_message_bytes: 4096,
        max_bag_instances: 4,
        max_id_bytes: 8,
    };

    /// Ids 1-3: our point, bag and label schemas; 4: an Avro point schema; 5: an evolved
    /// point schema (series_id renamed, int32 ts, a new field); 6: a point without `ts`.
    fn registry() -> SchemaRegistry {
        let r = SchemaRegistry::offline(8);
        r.insert(1, SchemaType::Protobuf, POINT_PROTO).unwrap();
        r.insert(2, SchemaType::Protobuf, BAG_PROTO).unwrap();
        r.insert(3, SchemaType::Protobuf, LABEL_PROTO).unwrap();
        r.insert(4, SchemaType::Avro, POINT_AVSC).unwrap();
        let evolved = r#"syntax = "proto3"; package producer.v2;
            message Reading { string site = 7; string device = 1; int32 ts = 2;
                              optional double value = 3; }
            message Readings { repeated Reading readings = 1; }"#;
        r.insert(5, SchemaType::Protobuf, evolved).unwrap();
        let no_ts = r#"syntax = "proto3"; message P { string series_id = 1; double value = 3; }"#;
        r.insert(6, SchemaType::Protobuf, no_ts).unwrap();
        r
    }

    /// `json` (a record of `kind` or an array) in Protobuf, framed with schema `id`.
    fn proto(kind: RecordKind, id: u32, json: &Value) -> Vec<u8> {
        frame(id, &encode::body(kind, json))
    }

    fn same_as_json(kind: RecordKind, id: u32, json: Value) {
        let want = decode_json(kind, json.to_string().as_bytes(), &LIMITS);
        let got = decode(kind, &proto(kind, id, &json), &LIMITS, &registry());
        assert_eq!(got, want, "{json}");
    }

    fn rejected(kind: RecordKind, payload: &[u8], reason: DeadReason, needle: &str) {
        match decode(kind, payload, &LIMITS, &registry()).as_slice() {
            [Err(r)] if r.reason == reason && r.detail.contains(needle) => {}
            other => panic!("wanted {reason} with {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn records_decode_as_their_json_form() {
        use RecordKind::*;
        same_as_json(
            Point,
            1,
            json!({"series_id": "pump-7", "ts": 1_732_550_400_123_i64, "value": 0.53, "model": "fans"}),
        );
        // A zero is sent (value is `optional`), multichannel values, a batch.
        same_as_json(Point, 1, json!({"series_id": "a", "ts": 0, "value": 0.0}));
        same_as_json(
            Point,
            1,
            json!([{"series_id": "a", "ts": 5, "values": [1.5, -2.0]},
                   {"series_id": "b", "ts": 6, "value": 2.5}]),
        );
        // Rules of the JSON path apply: an id too long, no value, an empty id.
        same_as_json(
            Point,
            1,
            json!({"series_id": "123456789", "ts": 1, "value": 0.5}),
        );
        same_as_json(Point, 1, json!({"series_id": "a", "ts": 1}));
        same_as_json(Point, 1, json!([{"series_id": "", "ts": 1, "value": 1.0}]));
        same_as_json(
            Bag,
            2,
            json!({"bag_id": "mol-1", "instances": [[1, 2], [3, 4.5]], "label": "active"}),
        );
        // Too many instances, instances of two lengths.
        same_as_json(
            Bag,
            2,
            json!({"bag_id": "b", "instances": [[1], [2], [3], [4], [5]]}),
        );
        same_as_json(Bag, 2, json!([{"bag_id": "b", "instances": [[1, 2], [3]]}]));
        same_as_json(
            Label,
            3,
            json!({"series_id": "s", "start": 1000, "end": 2000, "label": "walk"}),
        );
        same_as_json(
            Label,
            3,
            json!([{"bag_id": "b", "label": "x", "model": "m"}]),
        );
        same_as_json(
            Label,
            3,
            json!({"bag_id": "b", "series_id": "s", "label": "x"}),
        );
    }

    /// A NaN is the JSON path's `non_finite` dead letter, the batch's other records decode.
    #[test]
    fn non_finite_numbers_are_dead_letters_of_their_record() {
        let (record, batch) = reader::our_messages(RecordKind::Point);
        let mut nan = encode::message(&record, &json!({"series_id": "a", "ts": 1}));
        let value = record.get_field_by_name("value").unwrap();
        nan.set_field(&value, prost_reflect::Value::F64(f64::NAN));
        let good = encode::message(&record, &json!({"series_id": "a", "ts": 2, "value": 1.0}));
        let mut m = DynamicMessage::new(batch.clone());
        let items = vec![
            prost_reflect::Value::Message(nan),
            prost_reflect::Value::Message(good),
        ];
        m.set_field_by_number(1, prost_reflect::Value::List(items));
        let mut body = vec![2, 2]; // indexes [1]
        prost::Message::encode(&m, &mut body).unwrap();
        let want = decode_json(
            RecordKind::Point,
            br#"[{"series_id":"a","ts":1,"value":NaN},{"series_id":"a","ts":2,"value":1.0}]"#,
            &LIMITS,
        );
        assert_eq!(
            decode(RecordKind::Point, &frame(1, &body), &LIMITS, &registry()),
            want
        );
        assert_eq!(want[0].as_ref().unwrap_err().reason, DeadReason::NonFinite);
    }

    /// A producer's evolved schema: `series_id` renamed (same number), `ts` an int32, a new
    /// field, its own batch message; its records decode as ours.
    #[test]
    fn renamed_and_added_fields_decode_as_before() {
        let r = registry();
        let writer = match &*r.ready(5).unwrap() {
            WriterSchema::Protobuf(s) => s.resolved(&[1], RecordKind::Point).unwrap().clone(),
            _ => unreachable!(),
        };
        let reading = match writer.message.fields().next().unwrap().kind() {
            prost_reflect::Kind::Message(m) => m,
            _ => unreachable!(),
        };
        let points = json!([{"device": "a", "site": "plant-1", "ts": 7, "value": 0.5},
                            {"device": "a", "site": "plant-1", "ts": 8, "value": 2.5}]);
        let mut m = DynamicMessage::new(writer.message.clone());
        let items = points
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let mut one = encode::message(&reading, p);
                let ts = p["ts"].as_i64().unwrap() as i32;
                one.set_field_by_name("ts", prost_reflect::Value::I32(ts));
                prost_reflect::Value::Message(one)
            })
            .collect();
        m.set_field_by_number(1, prost_reflect::Value::List(items));
        let mut body = vec![2, 2];
        prost::Message::encode(&m, &mut body).unwrap();
        let want = decode_json(
            RecordKind::Point,
            br#"[{"series_id":"a","ts":7,"value":0.5},{"series_id":"a","ts":8,"value":2.5}]"#,
            &LIMITS,
        );
        assert!(want.iter().all(Result::is_ok));
        assert_eq!(
            decode(RecordKind::Point, &frame(5, &body), &LIMITS, &r),
            want
        );
    }

    #[test]
    fn broken_messages_are_dead_letters_with_reasons() {
        use DeadReason::*;
        use RecordKind::*;
        let good = proto(Point, 1, &json!({"series_id": "a", "ts": 1, "value": 0.5}));
        assert!(decode(Point, &good, &LIMITS, &registry())[0].is_ok());
        rejected(
            Point,
            &good[..good.len() - 3],
            Parse,
            "Protobuf of schema id 1",
        );
        rejected(Point, br#"{"series_id":"a"}"#, Parse, "wire format");
        let mut unknown = good.clone();
        unknown[1..5].copy_from_slice(&77u32.to_be_bytes());
        rejected(Point, &unknown, Schema, "schema id 77 is not known");
        // An Avro schema's id on a Protobuf topic.
        let mut avro = good.clone();
        avro[1..5].copy_from_slice(&4u32.to_be_bytes());
        rejected(
            Point,
            &avro,
            Schema,
            "is a AVRO schema; the topic is read as PROTOBUF",
        );
        // Message indexes: one the schema lacks, truncated ones, a garbled message.
        rejected(
            Point,
            &frame(1, &[2, 6, 0x08, 1]),
            Schema,
            "[3] name no message",
        );
        rejected(Point, &frame(1, &[4, 0]), Parse, "truncated");
        rejected(
            Point,
            &frame(1, &[0, 0xff, 0xff]),
            Parse,
            "Protobuf of schema id 1",
        );
        // A wire type that is not the field's (ts = 2 as a string).
        rejected(Point, &frame(1, &[0, 0x12, 1, b'x']), Parse, "Protobuf");
        // A schema without ts; a point schema on the bags topic.
        rejected(Point, &frame(6, &[0]), Schema, "has no field 2 (`ts`)");
        rejected(Bag, &good, Schema, "field 2 (`ts`)");
        rejected(Point, &vec![0; 5000], Oversized, "4096");
        // A list claiming 2^40 bytes: refused before any allocation.
        let mut huge = vec![0, 0x22];
        huge.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        rejected(Point, &frame(1, &huge), Parse, "Protobuf");
    }

    /// Well-formed records missing what the JSON path needs are its dead letters.
    #[test]
    fn records_missing_fields_are_the_json_paths_dead_letters() {
        use RecordKind::*;
        // A label without series_id or bag_id; a bag without instances.
        same_as_json(Label, 3, json!({"label": "x"}));
        same_as_json(Bag, 2, json!({"bag_id": "b"}));
        let empty = decode(Point, &frame(1, &[0]), &LIMITS, &registry());
        let want = decode_json(Point, br#"{"series_id":"","ts":0}"#, &LIMITS);
        assert_eq!(empty, want);
        assert!(empty[0].is_err());
    }
}
