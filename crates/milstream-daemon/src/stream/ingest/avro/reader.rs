//! Our side of Avro's schema resolution: the reader schemas (`schemas/*.avsc`) and how a
//! writer's schema maps onto them, worked out once per schema id. A writer field is read as
//! the reader field of its name, or of one of its aliases, or whose aliases name it (a
//! renamed field); its type must read as ours (Avro's promotions: int to long, int, long
//! and float to double, string and bytes). A writer field milstream does not know is read
//! and dropped (a new optional field); a reader field without a default that the writer
//! lacks makes the schema unusable for that topic.

use std::sync::{Arc, OnceLock};

use super::schema::{parse, Record as AvroRecord, Schema};
use crate::stream::ingest::record::RecordKind;

pub const POINT_AVSC: &str = include_str!("../../../../../../schemas/point.avsc");
pub const BAG_AVSC: &str = include_str!("../../../../../../schemas/bag.avsc");
pub const LABEL_AVSC: &str = include_str!("../../../../../../schemas/label.avsc");

/// The reader schema of a record kind.
fn reader(kind: RecordKind) -> &'static AvroRecord {
    static READERS: OnceLock<[Arc<AvroRecord>; 3]> = OnceLock::new();
    let readers = READERS.get_or_init(|| {
        [POINT_AVSC, BAG_AVSC, LABEL_AVSC].map(|text| match parse(text) {
            Ok(Schema::Record(r)) => r,
            other => panic!("schemas/*.avsc must hold records: {other:?}"),
        })
    });
    match kind {
        RecordKind::Point => &readers[0],
        RecordKind::Bag => &readers[1],
        RecordKind::Label => &readers[2],
    }
}

/// A writer schema, resolved for each record kind (points, bags, labels).
#[derive(Debug)]
pub struct AvroSchema {
    pub id: u32,
    resolved: [Result<Resolved, String>; 3],
}

impl AvroSchema {
    /// Parses the schema's text and resolves it against each reader schema.
    pub fn new(id: u32, text: &str) -> Result<Self, String> {
        let schema = parse(text)?;
        let resolved = [RecordKind::Point, RecordKind::Bag, RecordKind::Label]
            .map(|kind| resolve(kind, &schema));
        Ok(Self { id, resolved })
    }

    /// How to read it as records of `kind`, or why it cannot be.
    pub fn resolved(&self, kind: RecordKind) -> &Result<Resolved, String> {
        match kind {
            RecordKind::Point => &self.resolved[0],
            RecordKind::Bag => &self.resolved[1],
            RecordKind::Label => &self.resolved[2],
        }
    }
}

/// How to read messages of one writer schema as records of one kind.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The writer's record type.
    pub record: Arc<AvroRecord>,
    /// Per writer field, milstream's name for it (`None`: read and dropped).
    pub names: Vec<Option<String>>,
    /// The message is an array of records, not one.
    pub many: bool,
}

/// Maps `writer` onto the reader schema of `kind`, or says why it cannot be.
pub fn resolve(kind: RecordKind, writer: &Schema) -> Result<Resolved, String> {
    let (record, many) = match writer {
        Schema::Record(r) => (r.clone(), false),
        Schema::Array(items) => match &**items {
            Schema::Record(r) => (r.clone(), true),
            other => return Err(not_a_record(other)),
        },
        other => return Err(not_a_record(other)),
    };
    let ours = reader(kind);
    let mut names = vec![None; record.fields.len()];
    for r in &ours.fields {
        let found = record.fields.iter().position(|w| {
            w.name == r.name || r.aliases.contains(&w.name) || w.aliases.contains(&r.name)
        });
        let Some(i) = found else {
            if r.has_default {
                continue;
            }
            return Err(format!(
                "the writer's record {} has no field `{}` (nor one aliased to it)",
                record.name, r.name
            ));
        };
        let w = &record.fields[i];
        if !reads_as(&w.schema, &r.schema) {
            return Err(format!(
                "field `{}` is {} in the writer's record {}; milstream reads {}",
                w.name,
                w.schema.describe(),
                record.name,
                r.schema.describe()
            ));
        }
        names[i] = Some(r.name.clone());
    }
    Ok(Resolved {
        record,
        names,
        many,
    })
}

fn not_a_record(s: &Schema) -> String {
    format!(
        "a message's schema must be a record or an array of records, found {}",
        s.describe()
    )
}

/// Whether data written as `w` reads as `r`. A null the writer may pick reads as the field's
/// absence (then the record's own rules decide), so a `["null", T]` writer field reads as
/// a `T` reader field.
fn reads_as(w: &Schema, r: &Schema) -> bool {
    use Schema::*;
    match (w, r) {
        (Null, _) => true,
        (Union(ws), _) => ws.iter().all(|w| reads_as(w, r)),
        (_, Union(rs)) => rs.iter().any(|r| !matches!(r, Null) && reads_as(w, r)),
        (Boolean, Boolean) | (Double, Double) => true,
        (String | Bytes, String) => true,
        (Int | Long { micros: false }, Long { micros: false }) => true,
        (Long { micros: true }, Long { micros: true }) => true,
        (Int | Long { micros: false } | Float, Double) => true,
        (Array(w), Array(r)) | (Map(w), Map(r)) => reads_as(w, r),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(fields: &str) -> Schema {
        parse(&format!(
            r#"{{"type":"record","name":"W","fields":[{fields}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn our_schemas_read_themselves() {
        for (kind, text) in [
            (RecordKind::Point, POINT_AVSC),
            (RecordKind::Bag, BAG_AVSC),
            (RecordKind::Label, LABEL_AVSC),
        ] {
            let r = resolve(kind, &parse(text).unwrap()).unwrap();
            assert!(r.names.iter().all(Option::is_some), "{kind:?}");
            assert!(!r.many);
        }
    }

    #[test]
    fn evolution_new_fields_aliases_and_promotions() {
        // A renamed field (with its old name as alias), an added optional field, int ts.
        let w = writer(
            r#"{"name":"device","type":"string","aliases":["series_id"]},
               {"name":"ts","type":"int"},
               {"name":"site","type":["null","string"],"default":null},
               {"name":"value","type":"float"}"#,
        );
        let r = resolve(RecordKind::Point, &w).unwrap();
        assert_eq!(
            r.names,
            [
                Some("series_id".into()),
                Some("ts".into()),
                None,
                Some("value".into())
            ]
        );
        let many = Schema::Array(Box::new(w));
        assert!(resolve(RecordKind::Point, &many).unwrap().many);
    }

    #[test]
    fn incompatible_writers_say_why() {
        let cases = [
            (r#"{"name":"series_id","type":"string"}"#, "no field `ts`"),
            (
                r#"{"name":"series_id","type":"string"},{"name":"ts","type":"string"}"#,
                "field `ts` is string in the writer's record W; milstream reads long",
            ),
            (
                r#"{"name":"series_id","type":"string"},
                   {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}"#,
                "timestamp-micros",
            ),
            (
                r#"{"name":"series_id","type":"string"},{"name":"ts","type":"long"},
                   {"name":"value","type":"string"}"#,
                "field `value` is string",
            ),
        ];
        for (fields, needle) in cases {
            let e = resolve(RecordKind::Point, &writer(fields)).unwrap_err();
            assert!(e.contains(needle), "{fields}: {e}");
        }
        let e = resolve(RecordKind::Point, &Schema::Long { micros: false }).unwrap_err();
        assert!(e.contains("record or an array of records"), "{e}");
    }
}
