//! The tables' schemas: the Arrow schema of the daemon's Parquet files as a Delta
//! `schemaString`, and the one change the data needs first. Delta has no unsigned integers,
//! so `UInt32` and `UInt64` columns (and lists of them) are written as `long` (Int64): every
//! Delta reader then reads the file's physical type as the log declares it.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Int64Array, ListArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use serde_json::{json, Value};

/// `t` as Delta stores it: unsigned 32-bit integers widened to Int64, inside lists too.
fn delta_type(t: &DataType) -> DataType {
    match t {
        DataType::UInt32 | DataType::UInt64 => DataType::Int64,
        DataType::List(f) => DataType::List(Arc::new(delta_field(f))),
        t => t.clone(),
    }
}

fn delta_field(f: &Field) -> Field {
    Field::new(f.name(), delta_type(f.data_type()), f.is_nullable())
}

/// `batch` with its columns in the types the table declares (see [`delta_type`]).
pub fn for_delta(batch: &RecordBatch) -> Result<RecordBatch, arrow_schema::ArrowError> {
    // Lengths and nullability are kept, so only a schema mismatch could fail.
    let schema = batch.schema();
    let fields: Vec<Field> = schema.fields().iter().map(|f| delta_field(f)).collect();
    let mut columns = Vec::with_capacity(fields.len());
    for (col, f) in batch.columns().iter().zip(&fields) {
        columns.push(if col.data_type() == f.data_type() {
            col.clone()
        } else {
            widen(col)
        });
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// A `UInt32` or `UInt64` column, or a list of them, as Int64 (the only change [`delta_type`] makes;
/// done here rather than with arrow-cast, which is not otherwise in the build).
fn widen(col: &ArrayRef) -> ArrayRef {
    match col.data_type() {
        DataType::UInt32 => Arc::new(
            col.as_primitive::<UInt32Type>()
                .iter()
                .map(|v| v.map(i64::from))
                .collect::<Int64Array>(),
        ),
        // Counts (a detector's observations) far below i64::MAX; saturated, never wrapped.
        DataType::UInt64 => Arc::new(
            col.as_primitive::<UInt64Type>()
                .iter()
                .map(|v| v.map(|v| i64::try_from(v).unwrap_or(i64::MAX)))
                .collect::<Int64Array>(),
        ),
        DataType::List(_) => {
            let (field, offsets, values, nulls) = col.as_list::<i32>().clone().into_parts();
            let field = Arc::new(delta_field(&field));
            Arc::new(ListArray::new(field, offsets, widen(&values), nulls))
        }
        _ => col.clone(),
    }
}

/// The Delta type of an Arrow type; None for one the tables never hold.
fn type_json(t: &DataType) -> Option<Value> {
    Some(match t {
        DataType::Utf8 => json!("string"),
        DataType::Int32 => json!("integer"),
        DataType::Int64 => json!("long"),
        DataType::Float64 => json!("double"),
        DataType::Boolean => json!("boolean"),
        // Microseconds since the epoch, adjusted to UTC: Delta's `timestamp`.
        DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => json!("timestamp"),
        DataType::List(f) => json!({
            "type": "array",
            "elementType": type_json(f.data_type())?,
            "containsNull": f.is_nullable(),
        }),
        _ => return None,
    })
}

/// The `schemaString` of a table holding `schema` (after [`for_delta`]); an error names a
/// column whose type Delta cannot declare.
pub fn schema_string(schema: &Schema) -> Result<String, String> {
    let mut fields = Vec::new();
    for f in schema.fields() {
        let t = type_json(f.data_type())
            .ok_or_else(|| format!("column {}: {} has no Delta type", f.name(), f.data_type()))?;
        fields.push(json!({
            "name": f.name(),
            "type": t,
            "nullable": f.is_nullable(),
            "metadata": {},
        }));
    }
    Ok(json!({"type": "struct", "fields": fields}).to_string())
}

/// The column names of a `schemaString`, in order (empty when it does not parse).
pub fn column_names(schema_string: &str) -> Vec<String> {
    fields(schema_string)
        .iter()
        .filter_map(|f| f["name"].as_str().map(String::from))
        .collect()
}

fn fields(schema_string: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(schema_string).unwrap_or_default();
    v["fields"].as_array().cloned().unwrap_or_default()
}

/// How a table's schema (`current`) must change for rows of schema `ours`: None when it
/// has every column of ours; else the table's columns followed by ours it lacks, each
/// nullable (the table's older files hold none of it: an additive change). An error lists
/// the table's columns ours lacks (a newer writer made the table).
pub fn grown(current: &str, ours: &str) -> Result<Option<String>, Vec<String>> {
    let have = column_names(current);
    let ours_fields = fields(ours);
    let ours_names = column_names(ours);
    let missing: Vec<String> = have
        .iter()
        .filter(|c| !ours_names.contains(c))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    let mut all = fields(current);
    for mut f in ours_fields {
        if !have.iter().any(|h| f["name"] == json!(h)) {
            f["nullable"] = json!(true);
            all.push(f);
        }
    }
    if all.len() == have.len() {
        return Ok(None);
    }
    Ok(Some(json!({"type": "struct", "fields": all}).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::output::arrow::predictions::PREDICTION_SCHEMA;

    #[test]
    fn every_prediction_column_has_a_delta_type_and_unsigned_ones_widen() {
        let batch = RecordBatch::new_empty(PREDICTION_SCHEMA.clone());
        let batch = for_delta(&batch).unwrap();
        let s = schema_string(&batch.schema()).unwrap();
        assert!(!s.contains("UInt32"));
        let names = column_names(&s);
        assert_eq!(names.len(), PREDICTION_SCHEMA.fields().len());
        assert!(
            s.contains(r#"{"containsNull":true,"elementType":"long","type":"array"}"#),
            "{s}"
        );
    }

    #[test]
    fn a_schema_grows_by_nullable_columns_at_its_end_and_never_shrinks() {
        let old = r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}}]}"#;
        let new = r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}},{"name":"b","type":"double","nullable":false,"metadata":{}}]}"#;
        assert_eq!(grown(old, old), Ok(None));
        let g = grown(old, new).unwrap().unwrap();
        assert_eq!(column_names(&g), ["a", "b"]);
        assert!(g.contains(r#""name":"b","nullable":true"#), "{g}");
        assert_eq!(grown(new, old), Err(vec!["b".to_string()]));
        assert_eq!(grown(&g, new), Ok(None), "once grown, no further metaData");
    }
}
