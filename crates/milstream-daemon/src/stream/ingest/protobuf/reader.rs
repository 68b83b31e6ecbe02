//! Our side of Protobuf: the reader schemas (`schemas/*.proto`) and how a writer's message
//! maps onto them, worked out once per schema id for every message of its file. Fields match
//! by number, protobuf's own rule, so a field the producer renamed reads as before; a
//! writer field of another number is dropped (a new field). A writer field must read as
//! ours: string as string; the integer types that fit as int64; doubles, floats and those
//! integers as double (Avro's promotions); a list as a list. A field of ours that is
//! neither `optional` nor `repeated` (`series_id`, `ts`, `bag_id`, `label`) must be in the
//! writer's message, or the schema is unusable for that topic.
//!
//! A message is one record, or a batch: a message whose only field is a repeated message
//! (`Points`, `Bags`, `Labels`, or a producer's own) is a batch of that message's records.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_reflect::{FieldDescriptor, FileDescriptor, Kind, MessageDescriptor};

use super::descriptor::{all_messages, compile};
use crate::stream::ingest::record::RecordKind;

pub const POINT_PROTO: &str = include_str!("../../../../../../schemas/point.proto");
pub const BAG_PROTO: &str = include_str!("../../../../../../schemas/bag.proto");
pub const LABEL_PROTO: &str = include_str!("../../../../../../schemas/label.proto");

/// How a field of ours reads, and so what a writer field must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Str,
    Long,
    Double,
    /// A list of numbers (`values`).
    Doubles,
    /// A list of messages of one repeated number field: a list of lists (`instances`).
    Rows,
}

impl Shape {
    /// What the shape reads, as a `.proto` would write it.
    fn describe(self) -> &'static str {
        match self {
            Shape::Str => "string",
            Shape::Long => "int64",
            Shape::Double => "double",
            Shape::Doubles => "repeated double",
            Shape::Rows => "repeated messages of one repeated double",
        }
    }
}

/// A field of our reader schema.
#[derive(Debug)]
struct Ours {
    number: u32,
    name: String,
    shape: Shape,
    /// Neither `optional` nor `repeated`: the writer's message must have it.
    required: bool,
}

/// Our reader schema of `kind`: its file (record first, then its batch) and the fields of
/// its record.
struct Reader {
    file: FileDescriptor,
    fields: Vec<Ours>,
}

fn reader(kind: RecordKind) -> &'static Reader {
    static READERS: OnceLock<[Reader; 3]> = OnceLock::new();
    let readers = READERS.get_or_init(|| {
        [POINT_PROTO, BAG_PROTO, LABEL_PROTO].map(|text| {
            let file = compile(text).expect("schemas/*.proto compile (unit-tested)");
            let record = file
                .messages()
                .next()
                .expect("schemas/*.proto hold a record");
            let fields = record
                .fields()
                .map(|f| Ours {
                    number: f.number(),
                    name: f.name().to_owned(),
                    shape: shape_of(&f).expect("schemas/*.proto use the shapes read here"),
                    required: !f.is_list() && !f.supports_presence(),
                })
                .collect();
            Reader { file, fields }
        })
    });
    match kind {
        RecordKind::Point => &readers[0],
        RecordKind::Bag => &readers[1],
        RecordKind::Label => &readers[2],
    }
}

fn ours(kind: RecordKind) -> &'static [Ours] {
    &reader(kind).fields
}

/// The record message of our schema of `kind` and its batch message (`schemas/*.proto`).
pub fn our_messages(kind: RecordKind) -> (MessageDescriptor, MessageDescriptor) {
    let mut messages = reader(kind).file.messages();
    let record = messages
        .next()
        .expect("schemas/*.proto hold a record first");
    let batch = messages
        .next()
        .expect("schemas/*.proto hold a batch second");
    (record, batch)
}

/// The shape a field of ours reads as.
fn shape_of(f: &FieldDescriptor) -> Option<Shape> {
    Some(match (f.kind(), f.is_list()) {
        (Kind::String, false) => Shape::Str,
        (Kind::Int64, false) => Shape::Long,
        (Kind::Double, false) => Shape::Double,
        (Kind::Double, true) => Shape::Doubles,
        (Kind::Message(m), true) => {
            let mut fields = m.fields();
            match (fields.next(), fields.next()) {
                (Some(inner), None) if shape_of(&inner) == Some(Shape::Doubles) => Shape::Rows,
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// Whether a writer field reads as `shape`.
fn reads_as(w: &FieldDescriptor, shape: Shape) -> bool {
    let long = |k: &Kind| {
        matches!(
            k,
            Kind::Int64
                | Kind::Sint64
                | Kind::Sfixed64
                | Kind::Int32
                | Kind::Sint32
                | Kind::Sfixed32
                | Kind::Uint32
                | Kind::Fixed32
        )
    };
    let number = |k: &Kind| long(k) || matches!(k, Kind::Double | Kind::Float);
    if w.is_map() {
        return false;
    }
    match (shape, w.is_list()) {
        (Shape::Str, false) => w.kind() == Kind::String,
        (Shape::Long, false) => long(&w.kind()),
        (Shape::Double, false) => number(&w.kind()),
        (Shape::Doubles, true) => number(&w.kind()),
        (Shape::Rows, true) => match w.kind() {
            Kind::Message(m) => {
                let mut fields = m.fields();
                matches!((fields.next(), fields.next()),
                    (Some(inner), None) if reads_as(&inner, Shape::Doubles))
            }
            _ => false,
        },
        _ => false,
    }
}

/// A writer field read as one of ours.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub field: FieldDescriptor,
    /// Our name for it (the JSON key).
    pub name: String,
    pub shape: Shape,
    /// The writer's: its number, its type, whether it has presence (kept here for the fast
    /// path, which reads them for every field of every point).
    pub number: u32,
    pub kind: Kind,
    pub presence: bool,
}

/// How to read messages of one writer message type as records of one kind.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The message the indexes name (a record, or a batch of them).
    pub message: MessageDescriptor,
    /// Some: the message is a batch; its repeated field of records.
    pub batch: Option<FieldDescriptor>,
    /// The writer's fields that are ours.
    pub fields: Vec<Mapped>,
}

/// Maps the writer's `message` onto the reader schema of `kind`, or says why it cannot be.
pub fn resolve(kind: RecordKind, message: &MessageDescriptor) -> Result<Resolved, String> {
    let mut fields = message.fields();
    let (record, batch) = match (fields.next(), fields.next()) {
        (Some(only), None) if only.is_list() && !only.is_map() => match only.kind() {
            Kind::Message(m) => (m, Some(only)),
            _ => (message.clone(), None),
        },
        _ => (message.clone(), None),
    };
    let mut mapped = Vec::new();
    for r in ours(kind) {
        let Some(w) = record.get_field(r.number) else {
            if r.required {
                return Err(format!(
                    "the writer's message {} has no field {} (`{}`)",
                    record.full_name(),
                    r.number,
                    r.name
                ));
            }
            continue;
        };
        if !reads_as(&w, r.shape) {
            return Err(format!(
                "field {} (`{}`) of the writer's message {} is {}; milstream reads `{}` as {}",
                r.number,
                w.name(),
                record.full_name(),
                describe(&w),
                r.name,
                r.shape.describe()
            ));
        }
        mapped.push(Mapped {
            number: w.number(),
            kind: w.kind(),
            presence: w.supports_presence(),
            field: w,
            name: r.name.clone(),
            shape: r.shape,
        });
    }
    Ok(Resolved {
        message: message.clone(),
        batch,
        fields: mapped,
    })
}

/// A field's type as a `.proto` writes it: `repeated string`, `int32`, ...
fn describe(f: &FieldDescriptor) -> String {
    let kind = match f.kind() {
        Kind::Message(m) => m.full_name().to_owned(),
        Kind::Enum(e) => e.full_name().to_owned(),
        k => format!("{k:?}").to_lowercase(),
    };
    if f.is_list() {
        format!("repeated {kind}")
    } else {
        kind
    }
}

/// A writer's Protobuf schema: every message of its file, resolved for each record kind.
#[derive(Debug)]
pub struct ProtoSchema {
    pub id: u32,
    /// By message indexes; per kind (points, bags, labels).
    messages: HashMap<Vec<i32>, [Result<Resolved, String>; 3]>,
}

impl ProtoSchema {
    /// Compiles the schema's text and resolves each of its messages against each reader
    /// schema (a file holds a handful of messages; the answer it came in is at most 1 MiB).
    pub fn new(id: u32, text: &str) -> Result<Self, String> {
        let file = compile(text)?;
        let messages = all_messages(&file)
            .into_iter()
            .map(|(path, m)| {
                let per_kind = [RecordKind::Point, RecordKind::Bag, RecordKind::Label]
                    .map(|kind| resolve(kind, &m));
                (path, per_kind)
            })
            .collect();
        Ok(Self { id, messages })
    }

    /// How to read the message `indexes` name as records of `kind`, or why it cannot be.
    pub fn resolved(&self, indexes: &[i32], kind: RecordKind) -> Result<&Resolved, String> {
        let per_kind = self
            .messages
            .get(indexes)
            .ok_or_else(|| format!("message indexes {indexes:?} name no message of the schema"))?;
        let i = match kind {
            RecordKind::Point => 0,
            RecordKind::Bag => 1,
            RecordKind::Label => 2,
        };
        per_kind[i].as_ref().map_err(String::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> ProtoSchema {
        ProtoSchema::new(1, text).unwrap()
    }

    #[test]
    fn our_schemas_read_themselves_one_record_or_a_batch() {
        for (kind, text, n) in [
            (RecordKind::Point, POINT_PROTO, 5),
            (RecordKind::Bag, BAG_PROTO, 4),
            (RecordKind::Label, LABEL_PROTO, 6),
        ] {
            let s = schema(text);
            let one = s.resolved(&[0], kind).unwrap();
            assert!(one.batch.is_none(), "{kind:?}");
            assert_eq!(one.fields.len(), n, "{kind:?}");
            let many = s.resolved(&[1], kind).unwrap();
            assert!(many.batch.is_some(), "{kind:?}");
            assert_eq!(many.fields.len(), n, "{kind:?}");
        }
        let required: Vec<&str> = ours(RecordKind::Point)
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(required, ["series_id", "ts"]);
    }

    /// Renamed fields read by number, new fields are dropped, narrower types promote.
    #[test]
    fn evolution_renames_new_fields_and_promotions() {
        let s = schema(
            r#"syntax = "proto3";
            message P { string device = 1; int32 ts = 2; float value = 3; string site = 9; }"#,
        );
        let r = s.resolved(&[0], RecordKind::Point).unwrap();
        let names: Vec<(&str, &str)> = r
            .fields
            .iter()
            .map(|m| (m.field.name(), m.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [("device", "series_id"), ("ts", "ts"), ("value", "value")]
        );
    }

    #[test]
    fn incompatible_writers_say_why() {
        let cases = [
            ("string series_id = 1;", "has no field 2 (`ts`)"),
            (
                "string series_id = 1; string ts = 2;",
                "field 2 (`ts`) of the writer's message W is string",
            ),
            ("string series_id = 1; uint64 ts = 2;", "is uint64"),
            (
                "string series_id = 1; int64 ts = 2; repeated double value = 3;",
                "repeated double",
            ),
            (
                "string series_id = 1; int64 ts = 2; double values = 4;",
                "`values`",
            ),
        ];
        for (fields, needle) in cases {
            let text = format!("syntax = \"proto3\"; message W {{ {fields} }}");
            let e = schema(&text).resolved(&[0], RecordKind::Point).unwrap_err();
            assert!(e.contains(needle), "{fields}: {e}");
        }
        let s = schema(POINT_PROTO);
        assert!(s
            .resolved(&[2], RecordKind::Point)
            .unwrap_err()
            .contains("[2]"));
        // A point schema on the bags topic.
        let e = s.resolved(&[0], RecordKind::Bag).unwrap_err();
        assert!(
            e.contains("field 2 (`ts`) of the writer's message io.milstream.Point is int64; milstream reads `instances` as repeated messages"),
            "{e}"
        );
    }
}
