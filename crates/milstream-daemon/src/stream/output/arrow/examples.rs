//! The training store's rows: a labeled example, its Arrow columns and its read-back.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
    TimestampMicrosecondBuilder, UInt32Builder,
};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
    UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{bad_data, column, ms_to_us, read_batches, timestamps_ms, ts_type, ReadError};
use crate::mil::{Bag, Sample};
use crate::stream::output::store::Store;

/// What makes an example one: its key, its segment (None: a bag) and its model (a relabel
/// of the same segment for another model is that model's example).
pub(crate) type ExampleId = (String, Option<(i64, i64)>, Option<String>);

/// One labeled example.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// The series or bag id.
    pub key: String,
    /// Some for a series segment `[start, end]`; None for a bag.
    pub segment: Option<(i64, i64)>,
    pub label: String,
    /// Values per instance of a bag; a series segment's channel count (1: univariate).
    pub dim: usize,
    /// The segment's points (point by point, channel by channel), or the bag's instances
    /// row-major.
    pub values: Vec<f64>,
    pub source_topic: String,
    pub source_partition: i32,
    pub source_offset: i64,
    /// When the label arrived (Kafka timestamp of its message).
    pub labeled_at_ms: i64,
    /// The model whose example it is (None: a row of a store from before the column).
    pub model: Option<String>,
}

impl Example {
    /// One example per key: a relabel of the same segment or bag replaces the old one.
    pub(crate) fn identity(&self) -> ExampleId {
        (self.key.clone(), self.segment, self.model.clone())
    }

    pub fn sample(&self) -> Option<Sample> {
        match self.segment {
            Some(_) if self.dim <= 1 => Some(Sample::Series(self.values.clone())),
            Some(_) => {
                let c = self.dim;
                self.values.len().is_multiple_of(c).then(|| {
                    Sample::Multi(
                        (0..c)
                            .map(|k| self.values.iter().skip(k).step_by(c).copied().collect())
                            .collect(),
                    )
                })
            }
            None => Bag::new(self.dim, self.values.clone())
                .ok()
                .map(Sample::Bag),
        }
    }
}

pub static EXAMPLE_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let ts = ts_type();
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("segment_start", ts.clone(), true),
        Field::new("segment_end", ts.clone(), true),
        Field::new("label", DataType::Utf8, false),
        Field::new("dim", DataType::UInt32, false),
        Field::new(
            "values",
            DataType::List(Arc::new(Field::new("item", DataType::Float64, true))),
            false,
        ),
        Field::new("source_topic", DataType::Utf8, false),
        Field::new("source_partition", DataType::Int32, false),
        Field::new("source_offset", DataType::Int64, false),
        Field::new("labeled_at", ts, false),
        Field::new("model", DataType::Utf8, true),
    ]))
});

pub fn example_batch(rows: &[Example]) -> RecordBatch {
    let mut key = StringBuilder::new();
    let mut kind = StringBuilder::new();
    let mut start = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut end = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut label = StringBuilder::new();
    let mut dim = UInt32Builder::new();
    let mut values = ListBuilder::new(Float64Builder::new());
    let mut topic = StringBuilder::new();
    let mut partition = Int32Builder::new();
    let mut offset = Int64Builder::new();
    let mut at = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut model = StringBuilder::new();
    for e in rows {
        key.append_value(&e.key);
        kind.append_value(if e.segment.is_some() {
            "segment"
        } else {
            "bag"
        });
        start.append_option(e.segment.map(|s| ms_to_us(s.0)));
        end.append_option(e.segment.map(|s| ms_to_us(s.1)));
        label.append_value(&e.label);
        dim.append_value(e.dim as u32);
        values.values().append_slice(&e.values);
        values.append(true);
        topic.append_value(&e.source_topic);
        partition.append_value(e.source_partition);
        offset.append_value(e.source_offset);
        at.append_value(ms_to_us(e.labeled_at_ms));
        model.append_option(e.model.as_deref());
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(key.finish()),
        Arc::new(kind.finish()),
        Arc::new(start.finish()),
        Arc::new(end.finish()),
        Arc::new(label.finish()),
        Arc::new(dim.finish()),
        Arc::new(values.finish()),
        Arc::new(topic.finish()),
        Arc::new(partition.finish()),
        Arc::new(offset.finish()),
        Arc::new(at.finish()),
        Arc::new(model.finish()),
    ];
    RecordBatch::try_new(EXAMPLE_SCHEMA.clone(), cols).expect("builders match EXAMPLE_SCHEMA")
}

/// Reads one store file.
pub fn read_examples(store: &Store, rel: &str) -> Result<Vec<Example>, ReadError> {
    let reader = read_batches(store, rel)?;
    let mut out = Vec::new();
    for batch in reader {
        let b = batch?;
        let key: &StringArray = column(&b, "key")?;
        let start = timestamps_ms(&b, "segment_start")?;
        let end = timestamps_ms(&b, "segment_end")?;
        let label: &StringArray = column(&b, "label")?;
        let dim: &UInt32Array = column(&b, "dim")?;
        let values: &ListArray = column(&b, "values")?;
        let topic: &StringArray = column(&b, "source_topic")?;
        let partition: &Int32Array = column(&b, "source_partition")?;
        let offset: &Int64Array = column(&b, "source_offset")?;
        let at = timestamps_ms(&b, "labeled_at")?;
        // Absent in files written before examples named their model.
        let model: Option<&StringArray> = match b.column_by_name("model") {
            Some(_) => Some(column(&b, "model")?),
            None => None,
        };
        for i in 0..b.num_rows() {
            let v = values.value(i);
            let v = v
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or_else(|| bad_data("`values` is not a list of doubles"))?;
            out.push(Example {
                key: key.value(i).to_string(),
                segment: start[i].zip(end[i]),
                label: label.value(i).to_string(),
                dim: dim.value(i) as usize,
                values: v.values().to_vec(),
                source_topic: topic.value(i).to_string(),
                source_partition: partition.value(i),
                source_offset: offset.value(i),
                labeled_at_ms: at[i].ok_or_else(|| bad_data("`labeled_at` is null"))?,
                model: model
                    .filter(|m| !m.is_null(i))
                    .map(|m| m.value(i).to_string()),
            });
        }
    }
    Ok(out)
}
