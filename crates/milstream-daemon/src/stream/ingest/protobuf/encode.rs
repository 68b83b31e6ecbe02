//! Writing Protobuf messages of our schemas (`schemas/*.proto`) from the records' JSON form,
//! the inverse of `value`, through prost-reflect: what the bench's Protobuf feed and the
//! tests' records are made with. A JSON object is one record (message index 0), an array a
//! batch (message index 1).

use prost::Message as _;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, Value as Proto};
use serde_json::Value;

use super::indexes;
use super::reader::our_messages;
use crate::stream::ingest::record::RecordKind;

/// The message body (indexes, then the message) of `json`, a record of `kind` or an array
/// of them.
pub fn body(kind: RecordKind, json: &Value) -> Vec<u8> {
    let (record, batch) = our_messages(kind);
    let mut out = Vec::new();
    match json {
        Value::Array(items) => {
            indexes::write(&mut out, &[1]);
            let mut m = DynamicMessage::new(batch.clone());
            let field = batch
                .fields()
                .next()
                .expect("a batch has its records' field");
            let records = items
                .iter()
                .map(|j| Proto::Message(message(&record, j)))
                .collect();
            m.set_field(&field, Proto::List(records));
            m.encode(&mut out).expect("a Vec grows");
        }
        one => {
            indexes::write(&mut out, &[0]);
            message(&record, one).encode(&mut out).expect("a Vec grows");
        }
    }
    out
}

/// A message of type `desc` with the fields `json` has under their names (values of another
/// type than the field's are left out).
pub fn message(desc: &MessageDescriptor, json: &Value) -> DynamicMessage {
    let mut m = DynamicMessage::new(desc.clone());
    for f in desc.fields() {
        let Some(v) = json.get(f.name()) else {
            continue;
        };
        let one = |v: &Value| -> Option<Proto> {
            Some(match f.kind() {
                Kind::String => Proto::String(v.as_str()?.to_owned()),
                Kind::Int64 => Proto::I64(v.as_i64()?),
                Kind::Double => Proto::F64(v.as_f64()?),
                // A row: the inner array as the message of one repeated field.
                Kind::Message(inner) => {
                    let field = inner.fields().next()?;
                    let mut row = serde_json::Map::new();
                    row.insert(field.name().to_owned(), v.clone());
                    Proto::Message(message(&inner, &Value::Object(row)))
                }
                _ => return None,
            })
        };
        let value = if f.is_list() {
            v.as_array()
                .map(|items| Proto::List(items.iter().filter_map(one).collect()))
        } else {
            one(v)
        };
        if let Some(value) = value {
            m.set_field(&f, value);
        }
    }
    m
}
