//! A decoded Protobuf message as the JSON value its records' JSON form would parse to: each
//! writer field of ours under our name, non-finite numbers as the JSON path's markers. A
//! field with presence (`optional`, proto2, a message) is there when the producer set it; a
//! proto3 field without presence always has a value, its default when not sent (protobuf's
//! own reading: a `ts` of 0 is a ts of 0); an empty list reads as absent (the wire cannot
//! tell it from one).

use prost_reflect::{DynamicMessage, ReflectMessage, Value as Proto};
use serde_json::{Map, Value};

use super::reader::{Resolved, Shape};
use crate::stream::ingest::record::number_value;

/// The message's records: one JSON object, or an array of them for a batch; and whether a
/// number was non-finite (a marker in the value).
pub fn records(message: &DynamicMessage, resolved: &Resolved) -> (Value, bool) {
    let mut non_finite = false;
    let value = match &resolved.batch {
        Some(field) => Value::Array(match &*message.get_field(field) {
            Proto::List(items) => items
                .iter()
                .filter_map(Proto::as_message)
                .map(|m| record(m, resolved, &mut non_finite))
                .collect(),
            _ => Vec::new(),
        }),
        None => record(message, resolved, &mut non_finite),
    };
    (value, non_finite)
}

fn record(message: &DynamicMessage, resolved: &Resolved, non_finite: &mut bool) -> Value {
    let mut out = Map::new();
    for m in &resolved.fields {
        let absent = !message.has_field(&m.field);
        if absent && (m.field.supports_presence() || m.field.is_list()) {
            continue;
        }
        let v = convert(&message.get_field(&m.field), m.shape, non_finite);
        out.insert(m.name.clone(), v);
    }
    Value::Object(out)
}

/// A field's value as JSON. The writer's types were checked against `shape` when the schema
/// was resolved, so another value cannot come; it would read as null (a `schema` dead letter
/// of the record, never a panic).
fn convert(v: &Proto, shape: Shape, non_finite: &mut bool) -> Value {
    match shape {
        Shape::Str => v
            .as_str()
            .map_or(Value::Null, |s| Value::String(s.to_owned())),
        Shape::Long => long(v).map_or(Value::Null, Value::from),
        Shape::Double => number(v).map_or(Value::Null, |x| number_value(x, non_finite)),
        Shape::Doubles => doubles(v, non_finite),
        Shape::Rows => match v.as_list() {
            Some(rows) => Value::Array(
                rows.iter()
                    .map(|row| {
                        // A row is a message of one repeated number field (checked).
                        let m = row.as_message()?;
                        let f = m.descriptor().fields().next()?;
                        Some(doubles(&m.get_field(&f), non_finite))
                    })
                    .map(|row| row.unwrap_or(Value::Null))
                    .collect(),
            ),
            None => Value::Null,
        },
    }
}

fn doubles(v: &Proto, non_finite: &mut bool) -> Value {
    match v.as_list() {
        Some(items) => Value::Array(
            items
                .iter()
                .map(|x| number(x).map_or(Value::Null, |x| number_value(x, non_finite)))
                .collect(),
        ),
        None => Value::Null,
    }
}

fn long(v: &Proto) -> Option<i64> {
    match *v {
        Proto::I64(x) => Some(x),
        Proto::I32(x) => Some(i64::from(x)),
        Proto::U32(x) => Some(i64::from(x)),
        _ => None,
    }
}

fn number(v: &Proto) -> Option<f64> {
    match *v {
        Proto::F64(x) => Some(x),
        Proto::F32(x) => Some(f64::from(x)),
        // Avro's promotions: long to double may round, as it does there.
        Proto::I64(x) => Some(x as f64),
        _ => long(v).map(|x| x as f64),
    }
}
