//! The quality tables' rows (evaluations, drift events) as Arrow record batches.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
    TimestampMicrosecondBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{list_of, ms_to_us, ts_type};
use crate::stream::quality::{DriftEventRecord, EvaluationRecord};

/// The `evaluations` rows (documented in schemas/README.md).
pub static EVALUATION_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("window_start", ts_type(), true),
        Field::new("window_end", ts_type(), true),
        Field::new("label", DataType::Utf8, false),
        Field::new("predicted", DataType::Utf8, false),
        Field::new("correct", DataType::Boolean, false),
        Field::new("classes", list_of(DataType::Utf8), false),
        Field::new("scores", list_of(DataType::Float64), false),
        Field::new("model_name", DataType::Utf8, false),
        Field::new("model_version", DataType::Utf8, false),
        Field::new("source_topic", DataType::Utf8, false),
        Field::new("source_partition", DataType::Int32, false),
        Field::new("source_offset", DataType::Int64, false),
        Field::new("labeled_at", ts_type(), false),
    ]))
});

/// The `drift_events` rows (documented in schemas/README.md).
pub static DRIFT_EVENT_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("model_name", DataType::Utf8, false),
        Field::new("model_version", DataType::Utf8, false),
        Field::new("detector", DataType::Utf8, false),
        Field::new("method", DataType::Utf8, false),
        Field::new("signal", DataType::Utf8, false),
        Field::new("observations", DataType::UInt64, false),
        Field::new("action", DataType::Utf8, false),
        Field::new("source_topic", DataType::Utf8, false),
        Field::new("source_partition", DataType::Int32, false),
        Field::new("source_offset", DataType::Int64, false),
        Field::new("at", ts_type(), false),
    ]))
});

pub fn evaluation_batch(rows: &[EvaluationRecord]) -> RecordBatch {
    let mut key = StringBuilder::new();
    let mut start = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut end = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let (mut label, mut predicted) = (StringBuilder::new(), StringBuilder::new());
    let mut correct = BooleanBuilder::new();
    let mut classes = ListBuilder::new(StringBuilder::new());
    let mut scores = ListBuilder::new(Float64Builder::new());
    let (mut name, mut version, mut topic) = (
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    let mut partition = Int32Builder::new();
    let mut offset = Int64Builder::new();
    let mut labeled_at = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    for r in rows {
        key.append_value(&r.key);
        start.append_option(r.segment.map(|s| ms_to_us(s.0)));
        end.append_option(r.segment.map(|s| ms_to_us(s.1)));
        label.append_value(&r.label);
        predicted.append_value(&r.predicted);
        correct.append_value(r.correct);
        for c in &r.classes {
            classes.values().append_value(c);
        }
        classes.append(true);
        scores.values().append_slice(&r.scores);
        scores.append(true);
        name.append_value(&r.model_name);
        version.append_value(&r.model_version);
        topic.append_value(&r.source_topic);
        partition.append_value(r.source_partition);
        offset.append_value(r.source_offset);
        labeled_at.append_value(ms_to_us(r.labeled_at_ms));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(key.finish()),
        Arc::new(start.finish()),
        Arc::new(end.finish()),
        Arc::new(label.finish()),
        Arc::new(predicted.finish()),
        Arc::new(correct.finish()),
        Arc::new(classes.finish()),
        Arc::new(scores.finish()),
        Arc::new(name.finish()),
        Arc::new(version.finish()),
        Arc::new(topic.finish()),
        Arc::new(partition.finish()),
        Arc::new(offset.finish()),
        Arc::new(labeled_at.finish()),
    ];
    RecordBatch::try_new(EVALUATION_SCHEMA.clone(), cols).expect("builders match EVALUATION_SCHEMA")
}

pub fn drift_event_batch(rows: &[DriftEventRecord]) -> RecordBatch {
    let s = || StringBuilder::new();
    let (mut name, mut version, mut detector, mut method) = (s(), s(), s(), s());
    let (mut signal, mut action, mut topic) = (s(), s(), s());
    let mut observations = UInt64Builder::new();
    let mut partition = Int32Builder::new();
    let mut offset = Int64Builder::new();
    let mut at = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    for r in rows {
        name.append_value(&r.model_name);
        version.append_value(&r.model_version);
        detector.append_value(r.detector);
        method.append_value(r.method);
        signal.append_value(r.signal);
        observations.append_value(r.observations);
        action.append_value(r.action);
        topic.append_value(&r.source_topic);
        partition.append_value(r.source_partition);
        offset.append_value(r.source_offset);
        at.append_value(ms_to_us(r.at_ms));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(name.finish()),
        Arc::new(version.finish()),
        Arc::new(detector.finish()),
        Arc::new(method.finish()),
        Arc::new(signal.finish()),
        Arc::new(observations.finish()),
        Arc::new(action.finish()),
        Arc::new(topic.finish()),
        Arc::new(partition.finish()),
        Arc::new(offset.finish()),
        Arc::new(at.finish()),
    ];
    RecordBatch::try_new(DRIFT_EVENT_SCHEMA.clone(), cols)
        .expect("builders match DRIFT_EVENT_SCHEMA")
}
