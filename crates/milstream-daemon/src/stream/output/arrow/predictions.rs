//! The prediction and dead-letter rows as Arrow record batches.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
    TimestampMicrosecondBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{list_of, ms_to_us, ts_type};
use crate::stream::ingest::record::{DeadLetterRecord, PredictionRecord};

/// The prediction rows (documented in schemas/README.md, "Parquet / Arrow output").
pub static PREDICTION_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("window_start", ts_type(), true),
        Field::new("window_end", ts_type(), true),
        Field::new("label", DataType::Utf8, false),
        Field::new("classes", list_of(DataType::Utf8), false),
        Field::new("scores", list_of(DataType::Float64), false),
        Field::new("model_kind", DataType::Utf8, false),
        Field::new("model_version", DataType::Utf8, false),
        Field::new("model_name", DataType::Utf8, false),
        Field::new("top_hypothesis", list_of(DataType::UInt32), false),
        Field::new("top_class", list_of(DataType::Utf8), false),
        Field::new("top_offset", list_of(DataType::UInt32), false),
        Field::new("top_contribution", list_of(DataType::Float64), false),
        // The channel each top hypothesis reads (multichannel models; null otherwise).
        Field::new("top_channel", list_of(DataType::Utf8), false),
        Field::new("source_topic", DataType::Utf8, false),
        Field::new("source_partition", DataType::Int32, false),
        Field::new("source_offset", DataType::Int64, false),
        Field::new("first_offset", DataType::Int64, false),
        Field::new("emitted_at", ts_type(), false),
        // The top findings (hypotheses grouped by the place their best match covers)
        // and the share of the decision margin they carry; empty lists and null for models
        // without shapelets. Last, so readers that index columns by position keep working.
        Field::new("finding_text", list_of(DataType::Utf8), false),
        Field::new("finding_value", list_of(DataType::Float64), false),
        Field::new("finding_start", list_of(DataType::UInt32), false),
        Field::new("finding_end", list_of(DataType::UInt32), false),
        Field::new("finding_hypotheses", list_of(DataType::UInt32), false),
        Field::new("shown_share", DataType::Float64, true),
        // Added last and nullable: a Delta table from before it grows it (delta/table.rs).
        Field::new("probabilities", list_of(DataType::Float64), true),
    ]))
});

/// The dead-letter rows.
pub static DEAD_LETTER_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
        Field::new("reason", DataType::Utf8, false),
        Field::new("detail", DataType::Utf8, false),
        Field::new("raw_prefix", DataType::Utf8, false),
        Field::new("at", ts_type(), false),
    ]))
});

pub fn prediction_batch(rows: &[PredictionRecord]) -> RecordBatch {
    let n = rows.len();
    let mut key = StringBuilder::with_capacity(n, n * 16);
    let mut kind = StringBuilder::with_capacity(n, n * 6);
    let mut start = TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC");
    let mut end = TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC");
    let mut label = StringBuilder::with_capacity(n, n * 8);
    let mut classes = ListBuilder::new(StringBuilder::new());
    let mut scores = ListBuilder::new(Float64Builder::new());
    let mut model_kind = StringBuilder::with_capacity(n, n * 16);
    let mut model_version = StringBuilder::with_capacity(n, n * 16);
    let mut model_name = StringBuilder::with_capacity(n, n * 8);
    let mut top_h = ListBuilder::new(UInt32Builder::new());
    let mut top_c = ListBuilder::new(StringBuilder::new());
    let mut top_o = ListBuilder::new(UInt32Builder::new());
    let mut top_v = ListBuilder::new(Float64Builder::new());
    let mut top_ch = ListBuilder::new(StringBuilder::new());
    let mut topic = StringBuilder::with_capacity(n, n * 16);
    let mut partition = Int32Builder::with_capacity(n);
    let mut offset = Int64Builder::with_capacity(n);
    let mut first = Int64Builder::with_capacity(n);
    let mut emitted = TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC");
    let mut f_text = ListBuilder::new(StringBuilder::new());
    let mut f_value = ListBuilder::new(Float64Builder::new());
    let mut f_start = ListBuilder::new(UInt32Builder::new());
    let mut f_end = ListBuilder::new(UInt32Builder::new());
    let mut f_hyp = ListBuilder::new(UInt32Builder::new());
    let mut shown = Float64Builder::with_capacity(n);
    let mut probabilities = ListBuilder::new(Float64Builder::new());
    for r in rows {
        key.append_value(&r.key);
        kind.append_value(&r.kind);
        start.append_option(r.window_start_ms.map(ms_to_us));
        end.append_option(r.window_end_ms.map(ms_to_us));
        label.append_value(&r.label);
        for c in &r.classes {
            classes.values().append_value(c);
        }
        classes.append(true);
        scores.values().append_slice(&r.scores);
        scores.append(true);
        model_kind.append_value(&r.model_kind);
        model_version.append_value(&r.model_version);
        model_name.append_value(&r.model_name);
        for t in &r.top {
            top_h.values().append_value(t.hypothesis);
            top_c.values().append_value(&t.class);
            top_o.values().append_value(t.offset);
            top_v.values().append_value(t.contribution);
            top_ch.values().append_option(t.channel.as_deref());
        }
        top_h.append(true);
        top_c.append(true);
        top_o.append(true);
        top_v.append(true);
        top_ch.append(true);
        topic.append_value(&r.source_topic);
        partition.append_value(r.source_partition);
        offset.append_value(r.source_offset);
        first.append_value(r.first_offset);
        emitted.append_value(ms_to_us(r.emitted_at_ms));
        for f in r.findings.iter().flatten() {
            f_text.values().append_value(&f.text);
            f_value.values().append_value(f.value);
            f_start.values().append_value(f.start);
            f_end.values().append_value(f.end);
            f_hyp.values().append_value(f.hypotheses);
        }
        f_text.append(true);
        f_value.append(true);
        f_start.append(true);
        f_end.append(true);
        f_hyp.append(true);
        shown.append_option(r.shown_share);
        probabilities.values().append_slice(&r.probabilities);
        probabilities.append(true);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(key.finish()),
        Arc::new(kind.finish()),
        Arc::new(start.finish()),
        Arc::new(end.finish()),
        Arc::new(label.finish()),
        Arc::new(classes.finish()),
        Arc::new(scores.finish()),
        Arc::new(model_kind.finish()),
        Arc::new(model_version.finish()),
        Arc::new(model_name.finish()),
        Arc::new(top_h.finish()),
        Arc::new(top_c.finish()),
        Arc::new(top_o.finish()),
        Arc::new(top_v.finish()),
        Arc::new(top_ch.finish()),
        Arc::new(topic.finish()),
        Arc::new(partition.finish()),
        Arc::new(offset.finish()),
        Arc::new(first.finish()),
        Arc::new(emitted.finish()),
        Arc::new(f_text.finish()),
        Arc::new(f_value.finish()),
        Arc::new(f_start.finish()),
        Arc::new(f_end.finish()),
        Arc::new(f_hyp.finish()),
        Arc::new(shown.finish()),
        Arc::new(probabilities.finish()),
    ];
    RecordBatch::try_new(PREDICTION_SCHEMA.clone(), cols).expect("builders match PREDICTION_SCHEMA")
}

pub fn dead_letter_batch(rows: &[DeadLetterRecord]) -> RecordBatch {
    let mut topic = StringBuilder::new();
    let mut partition = Int32Builder::new();
    let mut offset = Int64Builder::new();
    let mut reason = StringBuilder::new();
    let mut detail = StringBuilder::new();
    let mut raw = StringBuilder::new();
    let mut at = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    for r in rows {
        topic.append_value(&r.topic);
        partition.append_value(r.partition);
        offset.append_value(r.offset);
        reason.append_value(&r.reason);
        detail.append_value(&r.detail);
        raw.append_value(&r.raw_prefix);
        at.append_value(ms_to_us(r.at_ms));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(topic.finish()),
        Arc::new(partition.finish()),
        Arc::new(offset.finish()),
        Arc::new(reason.finish()),
        Arc::new(detail.finish()),
        Arc::new(raw.finish()),
        Arc::new(at.finish()),
    ];
    RecordBatch::try_new(DEAD_LETTER_SCHEMA.clone(), cols)
        .expect("builders match DEAD_LETTER_SCHEMA")
}
