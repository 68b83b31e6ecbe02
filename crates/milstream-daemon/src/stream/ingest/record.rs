//! Wire records: what the daemon reads from Kafka (points, bags, labels), how a message is
//! decoded and validated, and what it writes back (predictions, dead letters).
//!
//! A Kafka message holds one JSON record or a JSON array of records; the topic it came from
//! (`RecordKind`) decides which record it must be. Decoding never fails as a whole: every
//! array element is decoded on its own, and each bad one becomes a `Rejected` with a stable
//! `DeadReason` for the dead-letter sink, so one bad reading never costs its neighbours.
//!
//! Validation is written by hand over `serde_json::Value` rather than derived, so that a
//! rejection names the field and the problem in words an operator can act on. The JSON
//! Schemas in `schemas/` describe the same rules; the tests at the bottom keep them in step.
//! Points, the hot path, first try a derived decoder that accepts only plainly valid points
//! (a strict subset of what the hand-written path accepts, with the same result); anything
//! else, good or bad, takes the hand-written path.

use std::fmt;
use std::sync::Arc;

use chrono::DateTime;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use thiserror::Error;

pub use crate::stream::score::contribution::{FindingSummary, TopContribution};

mod bounds;
mod lenient;
mod plain;
pub use bounds::reject_future;
use lenient::{replace_non_finite, NON_FINITE_KEY};
use plain::decode_plain_points;

/// Which topic a message came from decides what it must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    Point,
    Bag,
    Label,
}

/// The earliest event time accepted (`ts`, a label's `start` and `end`):
/// 0000-01-01T00:00:00Z in epoch milliseconds.
pub const MIN_TS_MS: i64 = -62_167_219_200_000;
/// The latest event time accepted: 9999-12-31T23:59:59.999Z in epoch milliseconds.
///
/// The range is what RFC 3339 can write (a four-digit year), so an integer and a string
/// name the same instants. Inside it the window arithmetic (`ts - prev_ts`, a window's
/// horizon) cannot overflow, a timestamp in microseconds (the Parquet and Arrow columns)
/// fits in an i64, and chrono names its date folder. Outside it is a `schema` dead letter.
pub const MAX_TS_MS: i64 = 253_402_300_799_999;

/// One reading of a series: one value per channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub series_id: Arc<str>,
    /// Event time, epoch milliseconds, in [`MIN_TS_MS`]..=[`MAX_TS_MS`].
    pub ts_ms: i64,
    /// The first channel's value (the only one of a univariate series). Always finite.
    pub value: f64,
    /// The other channels' values, in order: empty for a univariate series (no allocation
    /// on the hot path). Always finite.
    pub rest: Vec<f64>,
    /// The `model` field: the named model that scores this point (over the id routes).
    pub model: Option<String>,
}

impl Point {
    /// Values of this point: the channels of its series.
    pub fn channels(&self) -> usize {
        1 + self.rest.len()
    }
}

/// A multiple-instance bag as it arrived: `n` instances of `dim` values each.
#[derive(Debug, Clone, PartialEq)]
pub struct BagRecord {
    pub bag_id: String,
    /// Values per instance, at least 1.
    pub dim: usize,
    /// Row-major, `instances.len() == n * dim` with `n >= 1`; all finite.
    pub instances: Vec<f64>,
    pub label: Option<String>,
    /// The `model` field: the named model that scores this bag (over the id routes).
    pub model: Option<String>,
}

/// A training label for a series segment or for a bag.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelRecord {
    /// The segment [start_ms, end_ms] of a series is a training example.
    Segment {
        series_id: String,
        start_ms: i64,
        end_ms: i64,
        label: String,
        /// The `model` field: the named model whose example this is (over the id routes).
        model: Option<String>,
    },
    Bag {
        bag_id: String,
        label: String,
        model: Option<String>,
    },
}

impl LabelRecord {
    /// The model the label names, if it names one.
    pub fn model(&self) -> Option<&str> {
        match self {
            LabelRecord::Segment { model, .. } | LabelRecord::Bag { model, .. } => model.as_deref(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Point(Point),
    Bag(BagRecord),
    Label(LabelRecord),
}

/// Why a record went to the dead-letter sink. `as_str()` gives the stable snake_case code
/// used in metrics labels and output rows.
///
/// `decode` produces the first six; the others are decided later in the pipeline
/// (windowing, scoring, label joins) and live here so that all codes are defined in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeadReason {
    /// The payload is not JSON.
    Parse,
    /// JSON, but not the record the topic expects (missing field, wrong type, ...).
    Schema,
    /// A NaN, Infinity or out-of-range number where a number was needed.
    NonFinite,
    /// Bag instances that are empty or of different lengths.
    Dimension,
    /// A bag with more instances than `max_bag_instances`, or an id, model name or class
    /// longer than `max_id_bytes`.
    TooLarge,
    /// A message larger than `max_message_bytes`; not parsed at all.
    Oversized,
    /// Event time behind the window's watermark.
    Late,
    /// Event time beyond the message's arrival plus `limits.max_future_skew_ms`.
    Future,
    /// No model is loaded to score with.
    NoModel,
    /// A label whose segment (or bag) is not in the kept history, or whose points did not
    /// arrive within `training.label_wait_ms`.
    Unjoined,
    /// A label naming a class the model does not know, with `training.freeze_classes`.
    UnknownClass,
    /// Handling the message panicked (a bug, not bad input): the detail has the panic's
    /// text; the worker carries on with the next message (`worker_pool.rs`).
    Internal,
}

impl DeadReason {
    /// Every reason, e.g. to pre-register one metric series per code.
    pub const ALL: [DeadReason; 12] = [
        DeadReason::Parse,
        DeadReason::Schema,
        DeadReason::NonFinite,
        DeadReason::Dimension,
        DeadReason::TooLarge,
        DeadReason::Oversized,
        DeadReason::Late,
        DeadReason::Future,
        DeadReason::NoModel,
        DeadReason::Unjoined,
        DeadReason::UnknownClass,
        DeadReason::Internal,
    ];

    /// The stable code: a bounded metric label value and the `reason` of a dead letter.
    pub fn as_str(&self) -> &'static str {
        match self {
            DeadReason::Parse => "parse",
            DeadReason::Schema => "schema",
            DeadReason::NonFinite => "non_finite",
            DeadReason::Dimension => "dimension",
            DeadReason::TooLarge => "too_large",
            DeadReason::Oversized => "oversized",
            DeadReason::Late => "late",
            DeadReason::Future => "future",
            DeadReason::NoModel => "no_model",
            DeadReason::Unjoined => "unjoined",
            DeadReason::UnknownClass => "unknown_class",
            DeadReason::Internal => "internal",
        }
    }
}

impl fmt::Display for DeadReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record (or a whole message) that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{reason}: {detail}")]
pub struct Rejected {
    pub reason: DeadReason,
    /// Human-readable; for an array element it starts with "element <i>: " (0-based).
    pub detail: String,
}

impl Rejected {
    pub(crate) fn new(reason: DeadReason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
        }
    }

    fn schema(detail: impl Into<String>) -> Self {
        Self::new(DeadReason::Schema, detail)
    }

    fn at_element(mut self, index: usize) -> Self {
        self.detail = format!("element {index}: {}", self.detail);
        self
    }
}

/// Bounds applied while decoding, so that one message cannot make the daemon allocate
/// without limit.
#[derive(Debug, Clone, Copy)]
pub struct DecodeLimits {
    /// Larger payloads are rejected (`Oversized`) before parsing.
    pub max_message_bytes: usize,
    /// Bags with more instances are rejected (`TooLarge`).
    pub max_bag_instances: usize,
    /// Longer ids, model names and classes are rejected (`TooLarge`).
    pub max_id_bytes: usize,
}

/// Decodes one Kafka message payload: one JSON record, or a JSON array of records.
///
/// Every array element is decoded on its own: good elements come back `Ok`, bad ones `Err`
/// with the element index in the detail ("element 3: ..."), in payload order. A payload over
/// `max_message_bytes` is one `Err(Oversized)` without parsing; a payload that is not JSON is
/// one `Err(Parse)`. An empty array gives an empty `Vec`.
///
/// Python's `json.dumps` writes non-finite floats as bare `NaN`, `Infinity` and `-Infinity`,
/// which are not JSON, and a literal like `1e999` overflows `f64`. Such a payload is decoded
/// leniently: those tokens stand for "a non-finite number", so the record holding one gets
/// `Err(NonFinite)` naming the field while the rest of an array still decodes. (A token in a
/// field the record does not use, like any unknown field, is ignored.) A payload that is not
/// JSON even with those tokens allowed is one `Err(Parse)`.
pub fn decode(
    kind: RecordKind,
    payload: &[u8],
    limits: &DecodeLimits,
) -> Vec<Result<Record, Rejected>> {
    if payload.len() > limits.max_message_bytes {
        return vec![Err(Rejected::new(
            DeadReason::Oversized,
            format!(
                "message is {} bytes, more than max_message_bytes = {}",
                payload.len(),
                limits.max_message_bytes
            ),
        ))];
    }
    if kind == RecordKind::Point {
        if let Some(points) = decode_plain_points(payload, limits.max_id_bytes) {
            return points.into_iter().map(|p| Ok(Record::Point(p))).collect();
        }
    }
    decode_checked(kind, payload, limits)
}

/// The hand-written path: every record decoded and checked on its own, with reasons.
fn decode_checked(
    kind: RecordKind,
    payload: &[u8],
    limits: &DecodeLimits,
) -> Vec<Result<Record, Rejected>> {
    let (value, lenient) = match serde_json::from_slice::<Value>(payload) {
        Ok(value) => (value, false),
        // Cold path: only failed parses pay for the rescan.
        Err(error) => {
            match replace_non_finite(payload).and_then(|p| serde_json::from_slice(&p).ok()) {
                Some(value) => (value, true),
                None => {
                    return vec![Err(Rejected::new(
                        DeadReason::Parse,
                        format!("not JSON: {error}"),
                    ))]
                }
            }
        }
    };
    decode_value(kind, value, limits, lenient)
}

/// Decodes a message already parsed into a JSON value (one record or an array of them), as
/// the JSON path does after parsing: other encodings (Avro) decode into the same value and
/// end here, so they give exactly the same records and rejections. `lenient`: the value
/// holds [`non_finite_marker`]s.
pub(crate) fn decode_value(
    kind: RecordKind,
    value: Value,
    limits: &DecodeLimits,
    lenient: bool,
) -> Vec<Result<Record, Rejected>> {
    let decoder = Decoder {
        kind,
        limits,
        lenient,
    };
    match value {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| decoder.record(item).map_err(|r| r.at_element(i)))
            .collect(),
        Value::Object(_) => vec![decoder.record(value)],
        other => vec![Err(Rejected::schema(format!(
            "a message must hold a JSON object or an array of objects, found {}",
            decoder.type_name(&other)
        )))],
    }
}

/// What stands for a non-finite number (`token`: "NaN", "Infinity", ...) in a value given to
/// [`decode_value`] with `lenient`: the record holding it is a `non_finite` dead letter.
pub(crate) fn non_finite_marker(token: &str) -> Value {
    let mut map = Map::new();
    map.insert(NON_FINITE_KEY.to_owned(), Value::String(token.to_owned()));
    Value::Object(map)
}

/// A number as the JSON value of another encoding (Avro, Protobuf): itself, or the marker of
/// its non-finite token, which sets `non_finite` (the value is then given to
/// [`decode_value`] as lenient).
pub(crate) fn number_value(v: f64, non_finite: &mut bool) -> Value {
    match Number::from_f64(v) {
        Some(n) => Value::Number(n),
        None => {
            *non_finite = true;
            let token = if v.is_nan() {
                "NaN"
            } else if v > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            };
            non_finite_marker(token)
        }
    }
}

/// Why a JSON value is not a usable number.
enum NotANumber<'v> {
    /// A non-finite token (lenient parse only): the token as written.
    NonFinite(&'v str),
    /// Some other JSON type, e.g. "a string".
    WrongType(&'static str),
}

struct Decoder<'a> {
    kind: RecordKind,
    limits: &'a DecodeLimits,
    /// The payload held non-finite tokens and was rewritten (see `replace_non_finite`).
    lenient: bool,
}

impl Decoder<'_> {
    fn record(&self, value: Value) -> Result<Record, Rejected> {
        let mut map = match value {
            Value::Object(map) if self.non_finite_token_in(&map).is_none() => map,
            other => {
                return Err(Rejected::schema(format!(
                    "a record must be a JSON object, found {}",
                    self.type_name(&other)
                )))
            }
        };
        match self.kind {
            RecordKind::Point => self.point(&mut map).map(Record::Point),
            RecordKind::Bag => self.bag(&mut map).map(Record::Bag),
            RecordKind::Label => self.label(&mut map).map(Record::Label),
        }
    }

    /// `{"series_id": "pump-7", "ts": 1732550400123, "value": 0.53}`, or `"values": [0.53]`.
    fn point(&self, map: &mut Map<String, Value>) -> Result<Point, Rejected> {
        let series_id = self.take_id(map, "series_id")?;
        let ts_ms = self.timestamp_ms(map, "ts")?;
        let (value, rest) = match (map.get("value"), map.get("values")) {
            (Some(value), None) => (self.field_number(value, "value")?, Vec::new()),
            (None, Some(values)) => self.channel_values(values)?,
            (Some(_), Some(_)) => {
                return Err(Rejected::schema(
                    "a point has either `value` or `values`, not both",
                ))
            }
            (None, None) => return Err(Rejected::schema("missing field `value` (or `values`)")),
        };
        let model = self.model_name(map)?;
        Ok(Point {
            series_id: series_id.into(),
            ts_ms,
            value,
            rest,
            model,
        })
    }

    /// `values`: one number per channel. Whether the count is the model's is checked where
    /// the model is known (the worker: a `dimension` dead letter).
    fn channel_values(&self, values: &Value) -> Result<(f64, Vec<f64>), Rejected> {
        match values {
            Value::Array(items) if items.is_empty() => Err(Rejected::schema(
                "`values` is empty; a point needs one value per channel",
            )),
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(
                        self.number(item)
                            .map_err(|e| self.number_error(e, &format!("values[{i}]")))?,
                    );
                }
                let first = out.remove(0);
                Ok((first, out))
            }
            other => Err(Rejected::schema(format!(
                "`values` must be an array of numbers (one per channel), found {}",
                self.type_name(other)
            ))),
        }
    }

    /// `{"bag_id": "mol-12", "instances": [[..], [..]], "label": "active"}`, label optional.
    fn bag(&self, map: &mut Map<String, Value>) -> Result<BagRecord, Rejected> {
        let bag_id = self.take_id(map, "bag_id")?;
        let label = match map.remove("label") {
            None | Some(Value::Null) => None,
            Some(value) => Some(self.label_string(value)?),
        };
        let rows = match map.get("instances") {
            Some(Value::Array(rows)) => rows,
            Some(other) => {
                return Err(Rejected::schema(format!(
                    "`instances` must be an array of arrays of numbers, found {}",
                    self.type_name(other)
                )))
            }
            None => return Err(Rejected::schema("missing field `instances`")),
        };
        if rows.is_empty() {
            return Err(Rejected::new(
                DeadReason::Dimension,
                "`instances` is empty; a bag needs at least one instance",
            ));
        }
        // Checked before any row is looked at: the bound is there to cap the work per bag.
        if rows.len() > self.limits.max_bag_instances {
            return Err(Rejected::new(
                DeadReason::TooLarge,
                format!(
                    "bag has {} instances, more than max_bag_instances = {}",
                    rows.len(),
                    self.limits.max_bag_instances
                ),
            ));
        }
        let mut dim = 0;
        let mut instances = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let row = match row {
                Value::Array(row) => row,
                other => {
                    return Err(Rejected::schema(format!(
                        "`instances[{i}]` must be an array of numbers, found {}",
                        self.type_name(other)
                    )))
                }
            };
            if row.is_empty() {
                return Err(Rejected::new(
                    DeadReason::Dimension,
                    format!("instance {i} is empty"),
                ));
            }
            if i == 0 {
                dim = row.len();
                instances.reserve_exact(rows.len() * dim);
            } else if row.len() != dim {
                return Err(Rejected::new(
                    DeadReason::Dimension,
                    format!(
                        "instance {i} has {} values, instance 0 has {dim}; all instances of a bag must have the same length",
                        row.len()
                    ),
                ));
            }
            for (j, x) in row.iter().enumerate() {
                let x = self
                    .number(x)
                    .map_err(|e| self.number_error(e, &format!("instances[{i}][{j}]")))?;
                instances.push(x);
            }
        }
        let model = self.model_name(map)?;
        Ok(BagRecord {
            bag_id,
            dim,
            instances,
            label,
            model,
        })
    }

    /// `{"series_id", "start", "end", "label"}` or `{"bag_id", "label"}`.
    fn label(&self, map: &mut Map<String, Value>) -> Result<LabelRecord, Rejected> {
        // Key presence decides the form, as `required` does in schemas/label.schema.json.
        match (map.contains_key("series_id"), map.contains_key("bag_id")) {
            (true, false) => {
                let series_id = self.take_id(map, "series_id")?;
                let start_ms = self.timestamp_ms(map, "start")?;
                let end_ms = self.timestamp_ms(map, "end")?;
                if start_ms > end_ms {
                    return Err(Rejected::schema(format!(
                        "`start` ({start_ms} ms) is after `end` ({end_ms} ms)"
                    )));
                }
                let label = self.required_label(map)?;
                let model = self.model_name(map)?;
                Ok(LabelRecord::Segment {
                    series_id,
                    start_ms,
                    end_ms,
                    label,
                    model,
                })
            }
            (false, true) => {
                let bag_id = self.take_id(map, "bag_id")?;
                let label = self.required_label(map)?;
                let model = self.model_name(map)?;
                Ok(LabelRecord::Bag {
                    bag_id,
                    label,
                    model,
                })
            }
            (true, true) => Err(Rejected::schema(
                "a label has either `series_id` (a segment) or `bag_id` (a bag), not both",
            )),
            (false, false) => Err(Rejected::schema("missing field `series_id` or `bag_id`")),
        }
    }

    /// Takes an identifier out of the record (moving the string, no copy): a non-empty string.
    fn take_id(&self, map: &mut Map<String, Value>, field: &str) -> Result<String, Rejected> {
        match map.remove(field) {
            Some(Value::String(s)) if !s.is_empty() => self.short(s, field),
            Some(Value::String(_)) => Err(Rejected::schema(format!("`{field}` must not be empty"))),
            Some(other) => Err(Rejected::schema(format!(
                "`{field}` must be a non-empty string, found {}",
                self.type_name(&other)
            ))),
            None => Err(Rejected::schema(format!("missing field `{field}`"))),
        }
    }

    /// The optional `model` field: a non-empty string naming a model (null: absent). Whether
    /// the daemon has such a model is decided where the models are known (`no_model`).
    fn model_name(&self, map: &mut Map<String, Value>) -> Result<Option<String>, Rejected> {
        match map.remove("model") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => self.short(s, "model").map(Some),
            Some(Value::String(_)) => Err(Rejected::schema("`model` must not be empty")),
            Some(other) => Err(Rejected::schema(format!(
                "`model` must be a model's name (a string), found {}",
                self.type_name(&other)
            ))),
        }
    }

    fn required_label(&self, map: &mut Map<String, Value>) -> Result<String, Rejected> {
        match map.remove("label") {
            Some(value) => self.label_string(value),
            None => Err(Rejected::schema("missing field `label`")),
        }
    }

    fn label_string(&self, value: Value) -> Result<String, Rejected> {
        match value {
            Value::String(s) if s.is_empty() => Err(Rejected::schema("`label` must not be empty")),
            Value::String(s) => self.short(s, "label"),
            other => Err(Rejected::schema(format!(
                "`label` must be a string, found {}",
                self.type_name(&other)
            ))),
        }
    }

    /// Epoch milliseconds (an integer; `1.7e12`-style floats with no fraction also pass, as
    /// JSON Schema's "integer" allows) or an RFC 3339 string, within
    /// [`MIN_TS_MS`]..=[`MAX_TS_MS`].
    fn timestamp_ms(&self, map: &Map<String, Value>, field: &str) -> Result<i64, Rejected> {
        let ms = self.any_timestamp_ms(map, field)?;
        if !(MIN_TS_MS..=MAX_TS_MS).contains(&ms) {
            return Err(Rejected::schema(format!(
                "`{field}` {ms} is outside the accepted range {MIN_TS_MS}..={MAX_TS_MS} \
                 (years 0000 to 9999, UTC)"
            )));
        }
        Ok(ms)
    }

    /// [`Decoder::timestamp_ms`] before the range check.
    fn any_timestamp_ms(&self, map: &Map<String, Value>, field: &str) -> Result<i64, Rejected> {
        let invalid = |found: &dyn fmt::Display| {
            Rejected::schema(format!(
                "`{field}` must be an integer of epoch milliseconds or an RFC 3339 string, found {found}"
            ))
        };
        match map.get(field) {
            None => Err(Rejected::schema(format!("missing field `{field}`"))),
            Some(Value::Number(n)) => {
                if let Some(ms) = n.as_i64() {
                    return Ok(ms);
                }
                match n.as_f64() {
                    // The range check keeps the cast exact; i64::MAX itself is not an f64.
                    Some(x) if x.fract() == 0.0 && x >= i64::MIN as f64 && x < i64::MAX as f64 => {
                        Ok(x as i64)
                    }
                    _ => Err(invalid(n)),
                }
            }
            Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
                .map(|t| t.timestamp_millis())
                .map_err(|e| invalid(&format_args!("{} ({e})", quoted_prefix(s)))),
            Some(other) => match self.non_finite_token(other) {
                Some(token) => Err(non_finite(field, token)),
                None => Err(invalid(&self.type_name(other))),
            },
        }
    }

    fn field_number(&self, value: &Value, field: &str) -> Result<f64, Rejected> {
        self.number(value).map_err(|e| self.number_error(e, field))
    }

    fn number<'v>(&self, value: &'v Value) -> Result<f64, NotANumber<'v>> {
        match value.as_f64() {
            // serde_json never yields a non-finite f64; the check costs nothing and keeps
            // the promise of `Point::value` independent of that.
            Some(x) if x.is_finite() => Ok(x),
            Some(_) => Err(NotANumber::NonFinite("a non-finite number")),
            None => match self.non_finite_token(value) {
                Some(token) => Err(NotANumber::NonFinite(token)),
                None => Err(NotANumber::WrongType(self.type_name(value))),
            },
        }
    }

    fn number_error(&self, error: NotANumber<'_>, field: &str) -> Rejected {
        match error {
            NotANumber::NonFinite(token) => non_finite(field, token),
            NotANumber::WrongType(found) => {
                Rejected::schema(format!("`{field}` must be a number, found {found}"))
            }
        }
    }

    /// The token a lenient parse replaced, if `value` is such a stand-in.
    fn non_finite_token<'v>(&self, value: &'v Value) -> Option<&'v str> {
        match value {
            Value::Object(map) if self.lenient => self.non_finite_token_in(map),
            _ => None,
        }
    }

    fn non_finite_token_in<'v>(&self, map: &'v Map<String, Value>) -> Option<&'v str> {
        if !self.lenient || map.len() != 1 {
            return None;
        }
        map.get(NON_FINITE_KEY).and_then(Value::as_str)
    }

    fn type_name(&self, value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) if self.non_finite_token(value).is_some() => "a non-finite number",
            Value::Object(_) => "an object",
        }
    }
}

fn non_finite(field: &str, token: &str) -> Rejected {
    Rejected::new(
        DeadReason::NonFinite,
        format!("`{field}` is {token}; only finite numbers are accepted"),
    )
}

/// A string for an error detail, cut so that one bad field cannot flood the dead letters.
fn quoted_prefix(s: &str) -> String {
    const MAX_CHARS: usize = 64;
    match s.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}...", &s[..cut]),
        None => format!("{s:?}"),
    }
}

/// What the daemon writes for each scored window or bag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictionRecord {
    /// series_id or bag_id.
    pub key: String,
    /// "window" or "bag".
    pub kind: String,
    pub window_start_ms: Option<i64>,
    pub window_end_ms: Option<i64>,
    pub label: String,
    pub classes: Vec<String>,
    pub scores: Vec<f64>,
    pub model_kind: String,
    /// The name of the model that scored it (`model.name`, `model.bags_name`).
    pub model_name: String,
    pub model_version: String,
    pub top: Vec<TopContribution>,
    /// The top findings: hypotheses grouped by the place their best match covers, as
    /// `explain --out` draws them (issue 27); none for models without shapelets.
    /// Null for models without shapelets (and in rows written before it existed).
    #[serde(default)]
    pub findings: Option<Vec<FindingSummary>>,
    /// The share of the decision margin beyond the baseline (the score less the bias and
    /// the hypotheses' training means, `findings::baseline`) the findings carry.
    #[serde(default)]
    pub shown_share: Option<f64>,
    /// The class probabilities, parallel to `classes`: `Model::probabilities`, calibrated
    /// on held-out folds when the model was (`calibration.rs`). Empty in rows written
    /// before it existed.
    #[serde(default)]
    pub probabilities: Vec<f64>,
    pub source_topic: String,
    pub source_partition: i32,
    /// Offset of the message that completed the window / held the bag.
    pub source_offset: i64,
    /// Oldest source offset that contributed (== source_offset for bags).
    pub first_offset: i64,
    pub emitted_at_ms: i64,
}

/// What the daemon writes for each rejected record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetterRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// A `DeadReason` code.
    pub reason: String,
    pub detail: String,
    /// Lossy UTF-8 of the first 1,024 bytes of the payload.
    pub raw_prefix: String,
    pub at_ms: i64,
}

/// How much of a rejected payload a dead letter keeps: enough to recognise the producer and
/// the shape of the record, small enough that a flood of bad messages stays cheap.
pub const RAW_PREFIX_BYTES: usize = 1024;

impl DeadLetterRecord {
    /// The dead letter for one rejection. Note that every rejected element of an array
    /// message gets its own dead letter holding the same prefix of the whole payload.
    pub fn new(
        topic: &str,
        partition: i32,
        offset: i64,
        rejected: &Rejected,
        payload: &[u8],
        at_ms: i64,
    ) -> Self {
        let prefix = &payload[..payload.len().min(RAW_PREFIX_BYTES)];
        // A detail may quote the record (an id of a megabyte): kept to the same bound.
        let mut detail_end = rejected.detail.len().min(RAW_PREFIX_BYTES);
        while !rejected.detail.is_char_boundary(detail_end) {
            detail_end -= 1;
        }
        Self {
            topic: topic.to_owned(),
            partition,
            offset,
            reason: rejected.reason.as_str().to_owned(),
            detail: rejected.detail[..detail_end].to_owned(),
            raw_prefix: String::from_utf8_lossy(prefix).into_owned(),
            at_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_message_bytes: 1 << 20,
        max_bag_instances: 4,
        max_id_bytes: 256,
    };

    fn decode_str(kind: RecordKind, payload: &str) -> Vec<Result<Record, Rejected>> {
        decode(kind, payload.as_bytes(), &LIMITS)
    }

    /// The fast point path takes only what the checked path decodes the same way, and
    /// leaves the rest (including every malformed case) to it.
    #[test]
    fn plain_point_fast_path_agrees_with_the_checked_path() {
        let taken = [
            r#"{"series_id":"a","ts":1,"value":0.5}"#,
            r#"  {"value":-2,"ts":-5,"series_id":"p\u00e9-\"7\"","extra":{"x":[1]}}"#,
            r#"{"series_id":"a","ts":253402300799999,"value":1e308}"#,
            r#"{"series_id":"a","ts":-62167219200000,"value":1}"#,
            r#"{"series_id":"a","ts":0,"value":-0.0}"#,
            r#"[{"series_id":"a","ts":1,"value":1},{"series_id":"b","ts":2,"value":2.5}]"#,
            r#"[]"#,
            r#"{"series_id":"a","ts":1,"value":0.5,"model":"pumps"}"#,
            r#"{"series_id":"a","ts":1,"value":0.5,"model":null}"#,
        ];
        for p in taken {
            let fast = decode_plain_points(p.as_bytes(), LIMITS.max_id_bytes)
                .unwrap_or_else(|| panic!("{p}"));
            let checked = decode_checked(RecordKind::Point, p.as_bytes(), &LIMITS);
            let fast: Vec<Result<Record, Rejected>> =
                fast.into_iter().map(|p| Ok(Record::Point(p))).collect();
            assert_eq!(fast, checked, "{p}");
        }
        let left = [
            r#"{"series_id":"","ts":1,"value":0.5}"#,
            r#"{"series_id":"a","ts":1.5e12,"value":0.5}"#,
            // Outside years 0000..=9999: the checked path rejects it.
            r#"{"series_id":"a","ts":9007199254740993,"value":1e308}"#,
            r#"{"series_id":"a","ts":-62167219200001,"value":1}"#,
            r#"{"series_id":"a","ts":"2024-11-25T16:00:00Z","value":0.5}"#,
            r#"{"series_id":"a","ts":1,"values":[0.5]}"#,
            r#"{"series_id":"a","ts":1,"value":0.5,"values":[0.5]}"#,
            r#"{"series_id":"a","series_id":"b","ts":1,"value":0.5}"#,
            r#"{"series_id":"a","ts":1,"value":NaN}"#,
            r#"{"series_id":"a","ts":1,"value":1e999}"#,
            r#"{"series_id":"a","ts":1,"value":"0.5"}"#,
            r#"[{"series_id":"a","ts":1,"value":1},{"series_id":"b","ts":2}]"#,
            r#"[{"series_id":"a","ts":1,"value":1},7]"#,
            r#"7"#,
            r#"{"series_id":"a","ts":1,"value":0.5"#,
            r#"{"series_id":"a","ts":1,"value":0.5,"model":""}"#,
            r#"{"series_id":"a","ts":1,"value":0.5,"model":7}"#,
        ];
        for p in left {
            assert!(
                decode_plain_points(p.as_bytes(), LIMITS.max_id_bytes).is_none(),
                "{p}"
            );
        }
    }

    /// Points, bags and labels may name their model; an empty or non-string name is a
    /// schema error, null is no name.
    #[test]
    fn the_model_field_names_a_records_model() {
        let named = point(r#"{"series_id":"a","ts":1,"values":[1,2],"model":"fans"}"#);
        assert_eq!(named.model.as_deref(), Some("fans"));
        assert_eq!(point(r#"{"series_id":"a","ts":1,"value":1}"#).model, None);
        match one(
            RecordKind::Bag,
            r#"{"bag_id":"b","instances":[[1]],"model":"molecules"}"#,
        ) {
            Ok(Record::Bag(b)) => assert_eq!(b.model.as_deref(), Some("molecules")),
            other => panic!("{other:?}"),
        }
        for (payload, model) in [
            (
                r#"{"series_id":"a","start":1,"end":2,"label":"x","model":"fans"}"#,
                Some("fans"),
            ),
            (
                r#"{"bag_id":"b","label":"x","model":"molecules"}"#,
                Some("molecules"),
            ),
            (r#"{"bag_id":"b","label":"x","model":null}"#, None),
        ] {
            match one(RecordKind::Label, payload) {
                Ok(Record::Label(l)) => assert_eq!(l.model(), model, "{payload}"),
                other => panic!("{payload}: {other:?}"),
            }
        }
        for (kind, payload) in [
            (
                RecordKind::Point,
                r#"{"series_id":"a","ts":1,"value":1,"model":""}"#,
            ),
            (
                RecordKind::Bag,
                r#"{"bag_id":"b","instances":[[1]],"model":""}"#,
            ),
            (
                RecordKind::Label,
                r#"{"bag_id":"b","label":"x","model":""}"#,
            ),
        ] {
            rejected(
                kind,
                payload,
                DeadReason::Schema,
                "`model` must not be empty",
            );
        }
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"value":1,"model":["x"]}"#,
            DeadReason::Schema,
            "`model` must be a model's name (a string), found an array",
        );
    }

    /// The single outcome of a one-record message.
    fn one(kind: RecordKind, payload: &str) -> Result<Record, Rejected> {
        let mut out = decode_str(kind, payload);
        assert_eq!(out.len(), 1, "expected one outcome for {payload}: {out:?}");
        out.pop().expect("length checked above")
    }

    fn point(payload: &str) -> Point {
        match one(RecordKind::Point, payload) {
            Ok(Record::Point(p)) => p,
            other => panic!("expected a point from {payload}, got {other:?}"),
        }
    }

    /// Asserts a rejection with `reason` whose detail contains `needle`.
    fn rejected(kind: RecordKind, payload: &str, reason: DeadReason, needle: &str) {
        match one(kind, payload) {
            Err(r) => {
                assert_eq!(r.reason, reason, "{payload}: {r:?}");
                assert!(
                    r.detail.contains(needle),
                    "{payload}: detail {:?} lacks {needle:?}",
                    r.detail
                );
            }
            Ok(record) => panic!("expected {reason} for {payload}, got {record:?}"),
        }
    }

    fn p(series_id: &str, ts_ms: i64, value: f64) -> Point {
        Point {
            series_id: series_id.into(),
            ts_ms,
            value,
            rest: Vec::new(),
            model: None,
        }
    }

    #[test]
    fn point_single() {
        assert_eq!(
            point(r#"{"series_id": "pump-7", "ts": 1732550400123, "value": 0.53}"#),
            p("pump-7", 1_732_550_400_123, 0.53)
        );
        // Integers are numbers too; unknown fields are allowed.
        assert_eq!(
            point(r#"{"series_id":"a","ts":-5,"value":3,"unit":"bar","v":2}"#),
            p("a", -5, 3.0)
        );
    }

    #[test]
    fn point_array() {
        let out = decode_str(
            RecordKind::Point,
            r#"[{"series_id":"a","ts":1,"value":1.5},{"series_id":"b","ts":2,"value":-2}]"#,
        );
        assert_eq!(
            out,
            vec![
                Ok(Record::Point(p("a", 1, 1.5))),
                Ok(Record::Point(p("b", 2, -2.0)))
            ]
        );
        assert!(decode_str(RecordKind::Point, " [ ] ").is_empty());
    }

    #[test]
    fn point_rfc3339_ts() {
        let expected = p("a", 1_732_550_400_123, 1.0);
        assert_eq!(
            point(r#"{"series_id":"a","ts":"2024-11-25T16:00:00.123Z","value":1}"#),
            expected
        );
        assert_eq!(
            point(r#"{"series_id":"a","ts":"2024-11-25T17:00:00.123+01:00","value":1}"#),
            expected
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":"yesterday","value":1}"#,
            DeadReason::Schema,
            "`ts` must be an integer of epoch milliseconds or an RFC 3339 string",
        );
    }

    /// Event times outside years 0000..=9999 are `schema` dead letters (integers, floats
    /// and RFC 3339 strings whose offset moves them past year 9999), by the fast path and
    /// the hand-written one alike; the bounds themselves pass. Before, any i64 passed and
    /// overflowed the window arithmetic.
    #[test]
    fn timestamps_outside_years_0_to_9999_are_schema_dead_letters() {
        for ts in [
            i64::MAX.to_string(),
            i64::MIN.to_string(),
            (MAX_TS_MS + 1).to_string(),
            (MIN_TS_MS - 1).to_string(),
            "9.2e18".into(),
            "\"9999-12-31T23:59:59.999-00:01\"".into(),
        ] {
            for payload in [
                format!(r#"{{"series_id":"a","ts":{ts},"value":1}}"#),
                format!(r#"[{{"series_id":"a","ts":{ts},"value":1}}]"#),
                format!(r#"{{"series_id":"a","ts":{ts},"values":[1,2]}}"#),
            ] {
                rejected(
                    RecordKind::Point,
                    &payload,
                    DeadReason::Schema,
                    "outside the accepted range",
                );
            }
            for (start, end) in [(ts.as_str(), "0"), ("0", ts.as_str())] {
                rejected(
                    RecordKind::Label,
                    &format!(r#"{{"series_id":"a","start":{start},"end":{end},"label":"x"}}"#),
                    DeadReason::Schema,
                    "outside the accepted range",
                );
            }
        }
        for ts in [MIN_TS_MS, MAX_TS_MS, 0, -5] {
            assert_eq!(
                point(&format!(r#"{{"series_id":"a","ts":{ts},"value":1}}"#)).ts_ms,
                ts
            );
        }
        assert_eq!(
            point(r#"{"series_id":"a","ts":"9999-12-31T23:59:59.999Z","value":1}"#).ts_ms,
            MAX_TS_MS
        );
        assert_eq!(
            point(r#"{"series_id":"a","ts":"0000-01-01T00:00:00Z","value":1}"#).ts_ms,
            MIN_TS_MS
        );
    }

    #[test]
    fn point_ts_float_without_fraction() {
        // json.dumps(float(ms)) writes "1732550400123.0".
        assert_eq!(
            point(r#"{"series_id":"a","ts":1732550400123.0,"value":1}"#).ts_ms,
            1_732_550_400_123
        );
        for ts in ["1.5", "true", "null", "[1]", "1e300"] {
            rejected(
                RecordKind::Point,
                &format!(r#"{{"series_id":"a","ts":{ts},"value":1}}"#),
                DeadReason::Schema,
                "`ts` must be an integer",
            );
        }
    }

    #[test]
    fn point_values_of_one() {
        assert_eq!(
            point(r#"{"series_id":"a","ts":1,"values":[0.25]}"#),
            p("a", 1, 0.25)
        );
        // One number per channel; the count is checked against the model by the worker.
        let three = point(r#"{"series_id":"a","ts":1,"values":[1,2,3]}"#);
        assert_eq!(
            (three.value, three.rest.clone(), three.channels()),
            (1.0, vec![2.0, 3.0], 3)
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"values":[1,"x",3]}"#,
            DeadReason::Schema,
            "`values[1]` must be a number",
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"values":[]}"#,
            DeadReason::Schema,
            "`values` is empty",
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"values":2}"#,
            DeadReason::Schema,
            "`values` must be an array",
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"values":["x"]}"#,
            DeadReason::Schema,
            "`values[0]` must be a number",
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"value":1,"values":[1]}"#,
            DeadReason::Schema,
            "not both",
        );
    }

    #[test]
    fn parse_errors() {
        for payload in [
            r#"{"series_id":"#,
            "not json",
            "",
            r#"{"a":1}{"b":2}"#,
            "\u{feff}{}",
        ] {
            rejected(RecordKind::Point, payload, DeadReason::Parse, "not JSON");
        }
        // Lenient parsing of NaN does not excuse another syntax error.
        rejected(
            RecordKind::Point,
            r#"[{"series_id":"a","ts":1,"value":NaN},]"#,
            DeadReason::Parse,
            "not JSON",
        );
        rejected(
            RecordKind::Point,
            r#"{"value":NaNa}"#,
            DeadReason::Parse,
            "not JSON",
        );
    }

    #[test]
    fn schema_errors() {
        let cases = [
            (r#"{"series_id":"a","value":1}"#, "missing field `ts`"),
            (r#"{"ts":1,"value":1}"#, "missing field `series_id`"),
            (r#"{"series_id":"a","ts":1}"#, "missing field `value`"),
            (
                r#"{"series_id":"a","ts":1,"value":"0.5"}"#,
                "`value` must be a number",
            ),
            (
                r#"{"series_id":"a","ts":1,"value":null}"#,
                "`value` must be a number, found null",
            ),
            (
                r#"{"series_id":"","ts":1,"value":1}"#,
                "`series_id` must not be empty",
            ),
            (
                r#"{"series_id":7,"ts":1,"value":1}"#,
                "`series_id` must be a non-empty string, found a number",
            ),
            (
                "42",
                "a message must hold a JSON object or an array of objects, found a number",
            ),
            (r#""pump-7""#, "found a string"),
            ("null", "found null"),
        ];
        for (payload, needle) in cases {
            rejected(RecordKind::Point, payload, DeadReason::Schema, needle);
        }
        let out = decode_str(
            RecordKind::Point,
            r#"[[{"series_id":"a","ts":1,"value":1}], 3]"#,
        );
        assert_eq!(out.len(), 2);
        for (i, r) in out.into_iter().enumerate() {
            let r = r.expect_err("non-object elements are rejected");
            assert_eq!(r.reason, DeadReason::Schema);
            assert!(
                r.detail
                    .starts_with(&format!("element {i}: a record must be a JSON object")),
                "{r:?}"
            );
        }
    }

    #[test]
    fn non_finite_values() {
        for token in [
            "NaN",
            "Infinity",
            "-Infinity",
            "1e999",
            "-1e999",
            "123456789e400",
        ] {
            rejected(
                RecordKind::Point,
                &format!(r#"{{"series_id":"a","ts":1,"value":{token}}}"#),
                DeadReason::NonFinite,
                &format!("`value` is {token}"),
            );
        }
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1,"values":[NaN]}"#,
            DeadReason::NonFinite,
            "`values[0]` is NaN",
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":"a","ts":1e999,"value":1}"#,
            DeadReason::NonFinite,
            "`ts` is 1e999",
        );
        rejected(
            RecordKind::Bag,
            r#"{"bag_id":"m","instances":[[1,2],[3,-Infinity]]}"#,
            DeadReason::NonFinite,
            "`instances[1][1]` is -Infinity",
        );
        // A non-finite token where a record or a string belongs is a schema problem.
        rejected(
            RecordKind::Point,
            "NaN",
            DeadReason::Schema,
            "found a non-finite number",
        );
        rejected(
            RecordKind::Point,
            r#"{"series_id":NaN,"ts":1,"value":1}"#,
            DeadReason::Schema,
            "`series_id` must be a non-empty string, found a non-finite number",
        );
        // Fields the record does not use are ignored, whatever they hold.
        assert_eq!(
            point(r#"{"series_id":"a","ts":1,"value":2,"spare":NaN}"#),
            p("a", 1, 2.0)
        );
    }

    #[test]
    fn non_finite_in_an_array_costs_only_its_element() {
        // As Python's json.dumps writes a batch with one missing reading; strings that look
        // like the tokens (with escaped quotes) are left alone.
        let payload = r#"[{"series_id":"NaN \" Infinity","ts":1,"value":NaN},
                          {"series_id":"b\\","ts":2,"value":1e3},
                          {"series_id":"c","ts":3,"value":Infinity}]"#;
        let out = decode_str(RecordKind::Point, payload);
        assert_eq!(out.len(), 3);
        let r0 = out[0].clone().expect_err("NaN value");
        assert_eq!(
            (r0.reason, r0.detail.as_str()),
            (
                DeadReason::NonFinite,
                "element 0: `value` is NaN; only finite numbers are accepted"
            )
        );
        assert_eq!(out[1], Ok(Record::Point(p("b\\", 2, 1000.0))));
        let r2 = out[2].clone().expect_err("Infinity value");
        assert_eq!(r2.reason, DeadReason::NonFinite);
        assert!(
            r2.detail.starts_with("element 2: `value` is Infinity"),
            "{r2:?}"
        );
    }

    #[test]
    fn mixed_array_keeps_good_elements() {
        let payload = r#"[
            {"series_id":"a","ts":1,"value":1},
            {"series_id":"a","value":2},
            {"series_id":"a","ts":"2024-11-25T16:00:00Z","value":3},
            {"series_id":"a","ts":4,"value":"x"},
            {"series_id":"a","ts":5,"values":[5]}
        ]"#;
        let out = decode_str(RecordKind::Point, payload);
        assert_eq!(out.len(), 5);
        assert_eq!(out[0], Ok(Record::Point(p("a", 1, 1.0))));
        assert_eq!(
            out[1],
            Err(Rejected {
                reason: DeadReason::Schema,
                detail: "element 1: missing field `ts`".into()
            })
        );
        assert_eq!(out[2], Ok(Record::Point(p("a", 1_732_550_400_000, 3.0))));
        let r3 = out[3].clone().expect_err("string value");
        assert_eq!(r3.reason, DeadReason::Schema);
        assert!(
            r3.detail.starts_with("element 3: `value` must be a number"),
            "{r3:?}"
        );
        assert_eq!(out[4], Ok(Record::Point(p("a", 5, 5.0))));
    }

    #[test]
    fn oversized_is_not_parsed() {
        let limits = DecodeLimits {
            max_message_bytes: 10,
            max_bag_instances: 4,
            max_id_bytes: 256,
        };
        let out = decode(RecordKind::Point, b"this is not even JSON", &limits);
        assert_eq!(
            out,
            vec![Err(Rejected {
                reason: DeadReason::Oversized,
                detail: "message is 21 bytes, more than max_message_bytes = 10".into()
            })]
        );
        // At the limit is fine.
        let payload = br#"{"series_id":"a","ts":1,"value":1}"#;
        let limits = DecodeLimits {
            max_message_bytes: payload.len(),
            max_bag_instances: 4,
            max_id_bytes: 256,
        };
        assert!(decode(RecordKind::Point, payload, &limits)[0].is_ok());
    }

    #[test]
    fn bag_good_forms() {
        let out = decode_str(
            RecordKind::Bag,
            r#"[{"bag_id":"mol-12","instances":[[1,2,3],[4,5,6]],"label":"active"},
                {"bag_id":"mol-13","instances":[[0.5]]},
                {"bag_id":"mol-14","instances":[[1],[2],[3],[4]],"label":null}]"#,
        );
        assert_eq!(
            out,
            vec![
                Ok(Record::Bag(BagRecord {
                    bag_id: "mol-12".into(),
                    dim: 3,
                    instances: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                    label: Some("active".into()),
                    model: None,
                })),
                Ok(Record::Bag(BagRecord {
                    bag_id: "mol-13".into(),
                    dim: 1,
                    instances: vec![0.5],
                    label: None,
                    model: None,
                })),
                Ok(Record::Bag(BagRecord {
                    bag_id: "mol-14".into(),
                    dim: 1,
                    instances: vec![1.0, 2.0, 3.0, 4.0],
                    label: None,
                    model: None,
                })),
            ]
        );
    }

    #[test]
    fn bag_errors() {
        use DeadReason::*;
        let cases = [
            (
                r#"{"bag_id":"m","instances":[[1,2],[3]]}"#,
                Dimension,
                "instance 1 has 1 values, instance 0 has 2",
            ),
            (
                r#"{"bag_id":"m","instances":[[1],[2],[3,4]]}"#,
                Dimension,
                "instance 2 has 2 values, instance 0 has 1",
            ),
            (
                r#"{"bag_id":"m","instances":[[1],[]]}"#,
                Dimension,
                "instance 1 is empty",
            ),
            (
                r#"{"bag_id":"m","instances":[[]]}"#,
                Dimension,
                "instance 0 is empty",
            ),
            (
                r#"{"bag_id":"m","instances":[]}"#,
                Dimension,
                "`instances` is empty",
            ),
            (
                r#"{"bag_id":"m","instances":[[1],[2],[3],[4],[5]]}"#,
                TooLarge,
                "bag has 5 instances, more than max_bag_instances = 4",
            ),
            (r#"{"bag_id":"m"}"#, Schema, "missing field `instances`"),
            (r#"{"instances":[[1]]}"#, Schema, "missing field `bag_id`"),
            (
                r#"{"bag_id":"m","instances":[1,2]}"#,
                Schema,
                "`instances[0]` must be an array of numbers, found a number",
            ),
            (
                r#"{"bag_id":"m","instances":{"a":[1]}}"#,
                Schema,
                "`instances` must be an array of arrays of numbers, found an object",
            ),
            (
                r#"{"bag_id":"m","instances":[[1,"2"]]}"#,
                Schema,
                "`instances[0][1]` must be a number, found a string",
            ),
            (
                r#"{"bag_id":"m","instances":[[1]],"label":3}"#,
                Schema,
                "`label` must be a string",
            ),
            (
                r#"{"bag_id":"m","instances":[[1]],"label":""}"#,
                Schema,
                "`label` must not be empty",
            ),
            (
                r#"{"bag_id":"m","instances":[[1,NaN]]}"#,
                NonFinite,
                "`instances[0][1]` is NaN",
            ),
        ];
        for (payload, reason, needle) in cases {
            rejected(RecordKind::Bag, payload, reason, needle);
        }
    }

    #[test]
    fn labels() {
        let out = decode_str(
            RecordKind::Label,
            r#"[{"series_id":"pump-7","start":1000,"end":"2024-11-25T16:00:00Z","label":"walking"},
                {"bag_id":"mol-12","label":"active"},
                {"series_id":"pump-7","start":5,"end":5,"label":"idle"}]"#,
        );
        assert_eq!(
            out,
            vec![
                Ok(Record::Label(LabelRecord::Segment {
                    series_id: "pump-7".into(),
                    start_ms: 1000,
                    end_ms: 1_732_550_400_000,
                    label: "walking".into(),
                    model: None,
                })),
                Ok(Record::Label(LabelRecord::Bag {
                    bag_id: "mol-12".into(),
                    label: "active".into(),
                    model: None,
                })),
                Ok(Record::Label(LabelRecord::Segment {
                    series_id: "pump-7".into(),
                    start_ms: 5,
                    end_ms: 5,
                    label: "idle".into(),
                    model: None,
                })),
            ]
        );
        let cases = [
            (
                r#"{"series_id":"a","start":2,"end":1,"label":"x"}"#,
                "`start` (2 ms) is after `end` (1 ms)",
            ),
            (r#"{"series_id":"a","bag_id":"b","label":"x"}"#, "not both"),
            (r#"{"label":"x"}"#, "missing field `series_id` or `bag_id`"),
            (
                r#"{"series_id":"a","end":1,"label":"x"}"#,
                "missing field `start`",
            ),
            (
                r#"{"series_id":"a","start":1,"label":"x"}"#,
                "missing field `end`",
            ),
            (
                r#"{"series_id":"a","start":1,"end":2}"#,
                "missing field `label`",
            ),
            (r#"{"bag_id":"b"}"#, "missing field `label`"),
            (
                r#"{"bag_id":"b","label":null}"#,
                "`label` must be a string, found null",
            ),
            (r#"{"bag_id":"","label":"x"}"#, "`bag_id` must not be empty"),
        ];
        for (payload, needle) in cases {
            rejected(RecordKind::Label, payload, DeadReason::Schema, needle);
        }
    }

    #[test]
    fn long_bad_strings_are_cut_in_details() {
        let ts = "9".repeat(10_000) + "x";
        let r = one(
            RecordKind::Point,
            &format!(r#"{{"series_id":"a","ts":"{ts}","value":1}}"#),
        )
        .expect_err("not a timestamp");
        assert_eq!(r.reason, DeadReason::Schema);
        assert!(r.detail.len() < 300, "{}", r.detail);
    }

    #[test]
    fn dead_reason_codes_are_stable_and_distinct() {
        let codes: Vec<&str> = DeadReason::ALL.iter().map(DeadReason::as_str).collect();
        assert_eq!(
            codes,
            [
                "parse",
                "schema",
                "non_finite",
                "dimension",
                "too_large",
                "oversized",
                "late",
                "future",
                "no_model",
                "unjoined",
                "unknown_class",
                "internal"
            ]
        );
        assert_eq!(DeadReason::NonFinite.to_string(), "non_finite");
    }

    #[test]
    fn dead_letter_keeps_a_lossy_prefix() {
        let rejected = Rejected {
            reason: DeadReason::Parse,
            detail: "not JSON: eof".into(),
        };
        let mut payload = vec![b'a'; 1023];
        payload.extend_from_slice("é and more".as_bytes()); // 'é' straddles byte 1,024
        let dl = DeadLetterRecord::new("points", 3, 42, &rejected, &payload, 7);
        assert_eq!(
            (dl.topic.as_str(), dl.partition, dl.offset, dl.at_ms),
            ("points", 3, 42, 7)
        );
        assert_eq!(
            (dl.reason.as_str(), dl.detail.as_str()),
            ("parse", "not JSON: eof")
        );
        assert_eq!(dl.raw_prefix, "a".repeat(1023) + "\u{fffd}");
        let short = DeadLetterRecord::new("points", 0, 0, &rejected, b"{\"x\"", 0);
        assert_eq!(short.raw_prefix, "{\"x\"");
    }
}

/// Keeps `schemas/*.schema.json` and this module in step: every schema example decodes, every
/// required field is required by the code too, and the output schemas list exactly the
/// fields the structs write.
#[cfg(test)]
mod schema_tests {
    use std::collections::BTreeSet;

    use serde_json::{json, Value};

    use super::*;

    const POINT: &str = include_str!("../../../../../schemas/point.schema.json");
    const BAG: &str = include_str!("../../../../../schemas/bag.schema.json");
    const LABEL: &str = include_str!("../../../../../schemas/label.schema.json");
    const PREDICTION: &str = include_str!("../../../../../schemas/prediction.schema.json");
    const DEAD_LETTER: &str = include_str!("../../../../../schemas/dead_letter.schema.json");

    const LIMITS: DecodeLimits = DecodeLimits {
        max_message_bytes: 1 << 20,
        max_bag_instances: 1_000,
        max_id_bytes: 256,
    };

    fn load(name: &str, text: &str) -> Value {
        let schema: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        for key in ["$id", "title", "description"] {
            assert!(
                schema[key].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: no {key}"
            );
        }
        let properties = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: no properties"));
        for (field, property) in properties {
            assert!(
                property["description"].is_string(),
                "{name}: `{field}` has no description"
            );
        }
        assert!(
            schema["examples"].as_array().is_some_and(|e| !e.is_empty()),
            "{name}: no examples"
        );
        schema
    }

    fn names(value: &Value) -> BTreeSet<String> {
        value
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().expect("names are strings").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The fields `example` must have: the schema's `required` plus those of the one `oneOf`
    /// branch whose `required` the example meets.
    fn required_for(name: &str, schema: &Value, example: &Value) -> BTreeSet<String> {
        let mut required = names(&schema["required"]);
        if let Some(branches) = schema["oneOf"].as_array() {
            let object = example.as_object().expect("examples are objects");
            let matching: Vec<BTreeSet<String>> = branches
                .iter()
                .map(|b| names(&b["required"]))
                .filter(|r| r.iter().all(|f| object.contains_key(f)))
                .collect();
            assert_eq!(
                matching.len(),
                1,
                "{name}: example {example} must match one oneOf branch"
            );
            required.extend(matching.into_iter().flatten());
        }
        let properties = schema["properties"].as_object().expect("checked in load");
        for field in &required {
            assert!(
                properties.contains_key(field),
                "{name}: required `{field}` is not a property"
            );
        }
        required
    }

    fn check_input(name: &str, text: &str, kind: RecordKind) {
        let schema = load(name, text);
        let examples = schema["examples"].as_array().expect("checked in load");
        for example in examples {
            let payload = example.to_string();
            let out = decode(kind, payload.as_bytes(), &LIMITS);
            assert!(
                matches!(out.as_slice(), [Ok(_)]),
                "{name}: example {payload} does not decode: {out:?}"
            );
            for field in required_for(name, &schema, example) {
                let mut without = example.clone();
                without
                    .as_object_mut()
                    .expect("examples are objects")
                    .remove(&field);
                let payload = without.to_string();
                let out = decode(kind, payload.as_bytes(), &LIMITS);
                match out.as_slice() {
                    [Err(r)] if r.reason == DeadReason::Schema && r.detail.contains(&format!("`{field}`")) => {}
                    other => panic!("{name}: without `{field}`, {payload} gave {other:?}, not a schema rejection naming it"),
                }
            }
        }
        // The whole examples array is also a valid message.
        let payload = Value::Array(examples.clone()).to_string();
        assert!(
            decode(kind, payload.as_bytes(), &LIMITS)
                .iter()
                .all(Result::is_ok),
            "{name}: examples as one array"
        );
    }

    #[test]
    fn point_schema() {
        check_input("point", POINT, RecordKind::Point);
    }

    #[test]
    fn bag_schema() {
        check_input("bag", BAG, RecordKind::Bag);
    }

    #[test]
    fn label_schema() {
        check_input("label", LABEL, RecordKind::Label);
    }

    /// Checks an output schema against the struct: its examples deserialize and serialize
    /// back to themselves, `properties` are the struct's fields and `required` exactly the
    /// non-`Option` ones (those that do not serialize to null in `sample`).
    fn check_output<T>(name: &str, text: &str, sample: &T)
    where
        T: Serialize + serde::de::DeserializeOwned + fmt::Debug,
    {
        let schema = load(name, text);
        for example in schema["examples"].as_array().expect("checked in load") {
            let record: T = serde_json::from_value(example.clone())
                .unwrap_or_else(|e| panic!("{name}: example {example} does not deserialize: {e}"));
            let back = serde_json::to_value(&record).expect("records serialize");
            assert_eq!(&back, example, "{name}: example does not round-trip");
        }
        let sample = serde_json::to_value(sample).expect("records serialize");
        let fields = sample.as_object().expect("records are objects");
        let all: BTreeSet<String> = fields.keys().cloned().collect();
        let non_null: BTreeSet<String> = fields
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| k.clone())
            .collect();
        let properties: BTreeSet<String> = schema["properties"]
            .as_object()
            .expect("checked")
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            properties, all,
            "{name}: properties differ from the struct's fields"
        );
        assert_eq!(
            names(&schema["required"]),
            non_null,
            "{name}: required differs from the non-Option fields"
        );
    }

    #[test]
    fn prediction_schema() {
        let sample = PredictionRecord {
            key: "mol-12".into(),
            kind: "bag".into(),
            window_start_ms: None,
            window_end_ms: None,
            label: "active".into(),
            classes: vec!["active".into(), "inactive".into()],
            scores: vec![0.4, -0.4],
            model_kind: "lpboost".into(),
            model_name: "series".into(),
            model_version: "1".into(),
            top: vec![],
            // Options (null here): not required, so rows written before them validate.
            findings: None,
            shown_share: None,
            probabilities: Vec::new(),
            source_topic: "bags".into(),
            source_partition: 0,
            source_offset: 1,
            first_offset: 1,
            emitted_at_ms: 2,
        };
        check_output("prediction", PREDICTION, &sample);
        // The nested contribution object too.
        let schema: Value = serde_json::from_str(PREDICTION).expect("checked above");
        let top = &schema["$defs"]["top_contribution"];
        let sample = serde_json::to_value(TopContribution {
            hypothesis: 0,
            class: "a".into(),
            offset: 0,
            contribution: 0.0,
            channel: Some("ax".into()),
        })
        .expect("serializes");
        let keys: BTreeSet<String> = sample
            .as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect();
        // Every key but the multichannel model's `channel` is required.
        let mut required = names(&top["required"]);
        required.insert("channel".into());
        assert_eq!(required, keys);
        let properties: BTreeSet<String> = top["properties"]
            .as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect();
        assert_eq!(properties, keys);
        // And the finding object: every key present (nullable ones serialize as null).
        let finding = &schema["$defs"]["finding"];
        let sample = serde_json::to_value(FindingSummary {
            text: "z occurs often".into(),
            asserts: "mean".into(),
            verdict: None,
            value: 0.1,
            start: 0,
            end: 9,
            hypotheses: 2,
            channel: None,
        })
        .expect("serializes");
        let keys: BTreeSet<String> = sample
            .as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect();
        assert_eq!(names(&finding["required"]), keys);
        let properties: BTreeSet<String> = finding["properties"]
            .as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect();
        assert_eq!(properties, keys);
    }

    #[test]
    fn dead_letter_schema() {
        let rejected = Rejected {
            reason: DeadReason::Schema,
            detail: "missing field `ts`".into(),
        };
        let sample = DeadLetterRecord::new("points", 0, 1, &rejected, b"{}", 2);
        check_output("dead_letter", DEAD_LETTER, &sample);
        let schema: Value = serde_json::from_str(DEAD_LETTER).expect("checked above");
        let codes: Vec<Value> = DeadReason::ALL.iter().map(|r| json!(r.as_str())).collect();
        assert_eq!(
            schema["properties"]["reason"]["enum"],
            Value::Array(codes),
            "dead_letter: reason codes"
        );
    }
}
