//! Reading a checkpoint: the Parquet summary of the log up to a version that other writers
//! (delta-rs's `optimize`, `create_checkpoint`, Spark) may leave, after which they may
//! also expire the JSON commits before it. Only its `txn`, `metaData` and `add` columns are
//! read (of `add`, the path).
//! The daemon writes no checkpoints itself (docs/DELIVERY.md, "Delta tables").

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch, StructArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::actions::{Action, Add, Format, Metadata, Txn};

/// The `txn`, `metaData` and `add` actions of one checkpoint file's bytes.
pub fn read_checkpoint(bytes: Vec<u8>) -> Result<Vec<Action>, String> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .map_err(|e| e.to_string())?;
    let schema = builder.parquet_schema();
    let roots: Vec<usize> = (0..schema.root_schema().get_fields().len())
        .filter(|i| {
            let name = schema.root_schema().get_fields()[*i].name();
            name == "txn" || name == "metaData" || name == "add"
        })
        .collect();
    let mask = ProjectionMask::roots(schema, roots);
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for batch in reader {
        actions_of(&batch.map_err(|e| e.to_string())?, &mut out);
    }
    Ok(out)
}

/// The non-null `txn`, `metaData` and `add` rows of a checkpoint batch (an `add` with its
/// path only: the rest is not read back).
fn actions_of(batch: &RecordBatch, out: &mut Vec<Action>) {
    if let Some(txn) = batch.column_by_name("txn").map(|c| c.as_struct()) {
        let app = string_field(txn, "appId");
        let version = txn
            .column_by_name("version")
            .map(|c| c.as_primitive::<Int64Type>());
        for row in 0..txn.len() {
            if let (true, Some(a), Some(v)) = (txn.is_valid(row), &app, version) {
                out.push(Action::Txn(Txn {
                    app_id: a.value(row).to_string(),
                    version: v.value(row),
                    last_updated: None,
                }));
            }
        }
    }
    if let Some(add) = batch.column_by_name("add").map(|c| c.as_struct()) {
        if let Some(path) = string_field(add, "path") {
            for row in (0..add.len()).filter(|r| add.is_valid(*r) && path.is_valid(*r)) {
                out.push(Action::Add(Add {
                    path: path.value(row).to_string(),
                    partition_values: Default::default(),
                    size: 0,
                    modification_time: 0,
                    data_change: false,
                    stats: None,
                }));
            }
        }
    }
    if let Some(meta) = batch.column_by_name("metaData").map(|c| c.as_struct()) {
        let (id, schema) = (string_field(meta, "id"), string_field(meta, "schemaString"));
        for row in 0..meta.len() {
            if let (true, Some(id), Some(s)) = (meta.is_valid(row), &id, &schema) {
                out.push(Action::MetaData(Metadata {
                    id: id.value(row).to_string(),
                    name: None,
                    format: Format {
                        provider: "parquet".into(),
                        options: Default::default(),
                    },
                    schema_string: s.value(row).to_string(),
                    partition_columns: Vec::new(),
                    configuration: Default::default(),
                    created_time: None,
                }));
            }
        }
    }
}

fn string_field<'a>(s: &'a StructArray, name: &str) -> Option<&'a arrow_array::StringArray> {
    s.column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
}

/// The checkpoint a listing of `_delta_log/` offers: its version and the files that make it
/// up (one, or every part of a multi-part checkpoint), the newest complete one.
pub fn newest_checkpoint(log_files: &[String]) -> Option<(i64, Vec<String>)> {
    use std::collections::BTreeMap;
    // version -> (parts expected, files found)
    let mut found: BTreeMap<i64, (usize, Vec<String>)> = BTreeMap::new();
    for f in log_files {
        let name = f.rsplit('/').next().unwrap_or(f);
        let Some(rest) = name.strip_suffix(".parquet") else {
            continue;
        };
        let mut parts = rest.split('.');
        let (Some(v), Some("checkpoint")) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(v) = v.parse::<i64>() else { continue };
        let of: usize = match (parts.next(), parts.next()) {
            (None, _) => 1,
            (Some(_), Some(n)) => n.parse().unwrap_or(usize::MAX),
            // A v2 checkpoint named by a UUID: not read here.
            (Some(_), None) => continue,
        };
        let e = found.entry(v).or_insert((of, Vec::new()));
        e.1.push(f.clone());
    }
    found
        .into_iter()
        .rev()
        .find(|(_, (of, files))| files.len() == *of)
        .map(|(v, (_, files))| (v, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_complete_checkpoint_is_chosen() {
        let files: Vec<String> = [
            "t/_delta_log/00000000000000000010.checkpoint.parquet",
            "t/_delta_log/00000000000000000010.json",
            "t/_delta_log/00000000000000000020.checkpoint.0000000001.0000000002.parquet",
            "t/_delta_log/_last_checkpoint",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (v, parts) = newest_checkpoint(&files).unwrap();
        assert_eq!((v, parts.len()), (10, 1));
    }
}
