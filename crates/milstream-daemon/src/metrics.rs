//! One Prometheus registry and every metric handle of the daemon.
//!
//! Names follow `milstream_<noun>_<unit>[_total]` with base units (seconds, bytes). Each name
//! is declared once below; its doc comment is also its `# HELP` text, so the two cannot drift.
//! Label values are bounded: topics come from the configuration, and reasons, sinks and
//! eviction causes are the fixed sets [`dead_letter_reasons`], [`SINKS`] and
//! [`EVICTION_CAUSES`]. Never label with a series or bag id.
//!
//! The registry is private to [`Metrics`] (not the process-global default registry), so tests
//! and embedded runs each see only their own counters.

use std::sync::Arc;

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// Declares the metric name constants and, from the same doc comments, the help table.
macro_rules! metric_names {
    ($($(#[doc = $doc:literal])+ $ident:ident = $name:literal;)+) => {
        $($(#[doc = $doc])+ pub const $ident: &str = $name;)+

        /// Every metric name with its help text (the constant's doc comment).
        const HELP: &[(&str, &str)] = &[$(($name, concat!($($doc),+))),+];
    };
}

metric_names! {
    /// Wire records decoded from Kafka messages (a message holds one or more), per topic and partition; moves before validation.
    RECORDS_CONSUMED = "milstream_records_consumed_total";
    /// Kafka messages received from the consumer, per topic; moves once per message, replays included.
    MESSAGES_CONSUMED = "milstream_messages_consumed_total";
    /// Records routed to the dead-letter queue instead of scoring, per reason; moves once per rejected record.
    DEAD_LETTERS = "milstream_dead_letters_total";
    /// Time-series windows turned into bags and scored; moves once per emitted window.
    WINDOWS_SCORED = "milstream_windows_scored_total";
    /// Bag records scored as received; moves once per bag.
    BAGS_SCORED = "milstream_bags_scored_total";
    /// Prediction rows made durable (file fsynced and renamed); moves when a sink file is committed.
    PREDICTIONS_WRITTEN = "milstream_predictions_written_total";
    /// Output files made durable, per sink; moves after the rename of each completed file.
    FILES_WRITTEN = "milstream_files_written_total";
    /// Bytes in output files made durable, per sink; moves with each completed file.
    BYTES_WRITTEN = "milstream_written_bytes_total";
    /// Rows in output files made durable, per sink; moves with each completed file.
    ROWS_WRITTEN = "milstream_written_rows_total";
    /// Kafka offset commits that succeeded; moves after each successful synchronous commit.
    COMMITS = "milstream_commits_total";
    /// Kafka offset commits that failed (the offsets are retried with the next commit).
    COMMIT_FAILURES = "milstream_commit_failures_total";
    /// Points dropped because their series already held a point with that timestamp.
    DUPLICATES_DROPPED = "milstream_duplicate_points_total";
    /// Series buffers evicted, per cause (idle timeout or capacity bound); moves once per evicted series.
    SERIES_EVICTED = "milstream_series_evicted_total";
    /// Series with a live window buffer right now; moves when a series starts or is evicted.
    LIVE_SERIES = "milstream_live_series";
    /// Messages between this consumer's position and the partition's end, per topic and partition (librdkafka statistics, every statistics.interval.ms).
    CONSUMER_LAG = "milstream_consumer_lag_messages";
    /// Predictions made durable, per predicted label and model version.
    PREDICTIONS_BY_LABEL = "milstream_predictions_total";
    /// Failed writes of a sink (each is retried until it succeeds; the consumer backs up meanwhile), per sink.
    SINK_ERRORS = "milstream_sink_errors_total";
    /// Rows a sink can never accept (larger than the topic takes), per sink and outcome: `shrunk` (sent as the row's identity without its payload) or `left_out` (not sent; the Parquet output keeps it).
    SINK_ROWS_REFUSED = "milstream_sink_rows_refused_total";
    /// Seconds a retraining run took (store read, fit, champion/challenger check, publish).
    TRAINING_SECONDS = "milstream_training_seconds";
    /// The version each model serves now (value 1; labels: the model's name, the version and its kind).
    MODEL_INFO = "milstream_model_info";
    /// Kafka partitions currently assigned to this consumer; moves on every rebalance.
    PARTITIONS_ASSIGNED = "milstream_assigned_partitions";
    /// Times a partition was paused because downstream channels were full (backpressure).
    PARTITION_PAUSES = "milstream_partition_pauses_total";
    /// Records replayed after an assignment to rebuild window state without emitting predictions.
    REPLAYED_RECORDS = "milstream_replayed_records_total";
    /// Partitions assigned with a commit, per source of their replay point (commit_metadata; output_file: the newest durable file's, when the commit had no metadata or the file ends at the commit and replays more; earliest: neither, nothing was output below the commit).
    REPLAY_POINT_SOURCE = "milstream_replay_point_source_total";
    /// Half-written temporary files removed by the start-up sweep.
    FILES_SWEPT = "milstream_swept_files_total";
    /// Scoring model replaced by a newer version (atomic swap); moves once per swap.
    MODEL_SWAPS = "milstream_model_swaps_total";
    /// Retraining runs, per model and outcome (promoted, rejected by the champion/challenger check, failed); moves once per run.
    TRAINING_RUNS = "milstream_training_runs_total";
    /// Failed retraining runs, per model and reason (too_few_examples, one_class, fit, window, store, registry); the champion keeps scoring.
    TRAINING_FAILURES = "milstream_training_failures_total";
    /// Labeled examples of the model the last training run read from the store (after retention), per model.
    TRAINING_EXAMPLES = "milstream_training_examples";
    /// Held-out accuracy of the serving model at the last training run (the champion's, or the promoted candidate's), per model.
    MODEL_HOLDOUT_ACCURACY = "milstream_model_holdout_accuracy";
    /// Seconds from receiving a record to its prediction being durable in every sink.
    CONSUME_TO_DURABLE = "milstream_consume_to_durable_seconds";
    /// Seconds spent scoring one window or bag with the current model.
    SCORING = "milstream_scoring_seconds";
    /// Labels compared with the serving model's prediction for their segment or bag, per model and version; moves when a label joins.
    LABELED_PREDICTIONS = "milstream_labeled_predictions_total";
    /// Of those, the predictions that named the label, per model and version.
    CORRECT_PREDICTIONS = "milstream_correct_predictions_total";
    /// The confusion matrix: labeled predictions per model, version, label and predicted label (a label outside the model's classes counts as `other`).
    CONFUSION = "milstream_confusion_total";
    /// Accuracy of a model version over its last drift.accuracy_window labels (prequential).
    MODEL_ACCURACY = "milstream_model_accuracy";
    /// Drift detector events per model, detector (errors: on labeled errors; margin: label-free, on the served margins; scores: label-free, PSI of the served class scores) and signal (warning, drift).
    DRIFT_EVENTS = "milstream_drift_events_total";
    /// The errors detector's state per model: 0 stable, 1 warning, 2 drift (until its next label).
    DRIFT_STATE = "milstream_drift_state";
    /// The label-free distribution test's last window per model: the largest PSI over the classes of its served scores against its version's first window (on the scoring worker that closed it).
    SCORE_PSI = "milstream_score_psi";
    /// 1 while the trainer holds a candidate fitted on a warning of the model's errors (challenged at the drift), else 0, per model.
    CANDIDATE_HELD = "milstream_candidate_held";
    /// Candidates fitted on a warning, per model and outcome (fitted; then promoted or rejected at the drift, or dropped when the warning cleared).
    WARNING_CANDIDATES = "milstream_warning_candidates_total";
    /// Failed reads and writes of the label-join history's blocks on disk, per op (write: the block stays in memory; read: the label's join goes to the dead letters as unjoined).
    HISTORY_IO_ERRORS = "milstream_history_io_errors_total";
    /// Checkpoints that could not be decoded on assignment, per kind (quality_state: an `evaluations` file's footer, checkpoint or rows; served_state: a `predictions` file's label-free detectors): the partition's detectors start clean instead.
    CHECKPOINTS_UNREADABLE = "milstream_checkpoints_unreadable_total";
    /// Entries dropped from the label-join history, per kind (series: none of its points arrived for training.history_ms; bag: beyond training.bag_cache bags or training.bag_cache_bytes).
    LABEL_JOIN_EVICTED = "milstream_label_join_evicted_total";
    /// Drifts of a model's errors answered by no better candidate (the held one and the retrain both lost): the champion keeps serving.
    DRIFT_NO_BETTER_CANDIDATE = "milstream_drift_no_better_candidate_total";
}

/// Every `outcome` label value of [`WARNING_CANDIDATES`].
pub const WARNING_CANDIDATE_OUTCOMES: [&str; 4] = ["fitted", "promoted", "rejected", "dropped"];

/// The labels of the per-version quality metrics.
const MODEL_VERSION: [&str; 2] = ["model", "model_version"];

/// Every `sink` label value of [`FILES_WRITTEN`] and [`BYTES_WRITTEN`].
pub const SINKS: [&str; 4] = ["parquet", "ipc", "dlq", "training"];

/// Buckets of [`TRAINING_SECONDS`]: 0.1 s to 1 h.
const TRAINING_BUCKETS: [f64; 10] = [0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];

/// Every `outcome` label value of [`TRAINING_RUNS`].
pub const TRAINING_OUTCOMES: [&str; 3] = ["promoted", "rejected", "failed"];

/// Every `reason` label value of [`TRAINING_FAILURES`].
pub const TRAINING_FAILURE_REASONS: [&str; 6] = [
    "too_few_examples",
    "one_class",
    "fit",
    "window",
    "store",
    "registry",
];

/// Every `cause` label value of [`SERIES_EVICTED`].
pub const EVICTION_CAUSES: [&str; 2] = ["idle", "capacity"];

/// Buckets of [`CONSUME_TO_DURABLE`]: 1 ms to 10 s, 1-2.5-5 per decade and finer between
/// 50 and 300 ms, where a p99 objective of 250 ms is decided. The lower end is a local
/// fsync, the upper end a file roll interval plus a slow commit.
const CONSUME_TO_DURABLE_BUCKETS: [f64; 17] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1.0, 2.5, 5.0,
    10.0,
];

/// Buckets of [`SCORING`]: 1 us to 100 ms, 1-2.5-5 per decade. Incremental scoring of one new
/// point sits at the low end; a full bag against a large model at the high end.
const SCORING_BUCKETS: [f64; 16] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 1e-1,
];

/// The registry and every metric handle. Handles are cheap to clone and safe to share.
pub struct Metrics {
    registry: Registry,
    /// [`RECORDS_CONSUMED`]`{topic, partition}`.
    pub records_consumed: IntCounterVec,
    /// [`CONSUMER_LAG`]`{topic, partition}`.
    pub consumer_lag: IntGaugeVec,
    /// [`PREDICTIONS_BY_LABEL`]`{label, model_version}`.
    pub predictions: IntCounterVec,
    /// [`SINK_ERRORS`]`{sink}`, sink in [`SINKS`] (plus `kafka`).
    pub sink_errors: IntCounterVec,
    /// [`SINK_ROWS_REFUSED`]`{sink, outcome}`.
    pub sink_rows_refused: IntCounterVec,
    /// [`TRAINING_SECONDS`].
    pub training_seconds: Histogram,
    /// [`MODEL_INFO`]`{model, model_version, kind}`: one series per model name.
    pub model_info: IntGaugeVec,
    /// The version and kind each model name serves now, so a swap removes only its series.
    serving: std::sync::Mutex<std::collections::HashMap<String, (String, String)>>,
    /// [`MESSAGES_CONSUMED`]`{topic}`.
    pub messages_consumed: IntCounterVec,
    /// [`DEAD_LETTERS`]`{reason}`, reason in [`dead_letter_reasons`].
    pub dead_letters: IntCounterVec,
    /// [`WINDOWS_SCORED`].
    pub windows_scored: IntCounter,
    /// [`BAGS_SCORED`].
    pub bags_scored: IntCounter,
    /// [`PREDICTIONS_WRITTEN`]: rows made durable.
    pub predictions_written: IntCounter,
    /// [`FILES_WRITTEN`]`{sink}`, sink in [`SINKS`].
    pub files_written: IntCounterVec,
    /// [`BYTES_WRITTEN`]`{sink}`, sink in [`SINKS`].
    pub bytes_written: IntCounterVec,
    /// [`ROWS_WRITTEN`]`{sink}`, sink in [`SINKS`].
    pub rows_written: IntCounterVec,
    /// [`COMMITS`].
    pub commits: IntCounter,
    /// [`COMMIT_FAILURES`].
    pub commit_failures: IntCounter,
    /// [`DUPLICATES_DROPPED`].
    pub duplicates_dropped: IntCounter,
    /// [`SERIES_EVICTED`]`{cause}`, cause in [`EVICTION_CAUSES`].
    pub series_evicted: IntCounterVec,
    /// [`LIVE_SERIES`].
    pub live_series: IntGauge,
    /// [`PARTITIONS_ASSIGNED`].
    pub partitions_assigned: IntGauge,
    /// [`PARTITION_PAUSES`].
    pub partition_pauses: IntCounter,
    /// [`REPLAYED_RECORDS`]: rebuilt without emitting.
    pub replayed_records: IntCounter,
    /// [`FILES_SWEPT`].
    pub files_swept: IntCounter,
    /// [`REPLAY_POINT_SOURCE`]`{source}`, source one of the replay point's sources.
    pub replay_point_source: IntCounterVec,
    /// [`MODEL_SWAPS`].
    pub model_swaps: IntCounter,
    /// [`TRAINING_RUNS`]`{model, outcome}`, outcome in [`TRAINING_OUTCOMES`].
    pub training_runs: IntCounterVec,
    /// [`TRAINING_FAILURES`]`{model, reason}`, reason in [`TRAINING_FAILURE_REASONS`].
    pub training_failures: IntCounterVec,
    /// [`TRAINING_EXAMPLES`]`{model}`.
    pub training_examples: IntGaugeVec,
    /// [`MODEL_HOLDOUT_ACCURACY`]`{model}`.
    pub model_holdout_accuracy: prometheus::GaugeVec,
    /// [`CONSUME_TO_DURABLE`].
    pub consume_to_durable_seconds: Histogram,
    /// [`SCORING`]: per window or bag.
    pub scoring_seconds: Histogram,
    /// [`LABELED_PREDICTIONS`]`{model, model_version}`.
    pub labeled_predictions: IntCounterVec,
    /// [`CORRECT_PREDICTIONS`]`{model, model_version}`.
    pub correct_predictions: IntCounterVec,
    /// [`CONFUSION`]`{model, model_version, label, predicted}`.
    pub confusion: IntCounterVec,
    /// [`MODEL_ACCURACY`]`{model, model_version}`.
    pub model_accuracy: prometheus::GaugeVec,
    /// [`DRIFT_EVENTS`]`{model, detector, signal}`.
    pub drift_events: IntCounterVec,
    /// [`DRIFT_STATE`]`{model}`.
    pub drift_state: IntGaugeVec,
    /// [`SCORE_PSI`]`{model}`.
    pub score_psi: prometheus::GaugeVec,
    /// [`CANDIDATE_HELD`]`{model}`.
    pub candidate_held: IntGaugeVec,
    /// [`WARNING_CANDIDATES`]`{model, outcome}`, outcome in [`WARNING_CANDIDATE_OUTCOMES`].
    pub warning_candidates: IntCounterVec,
    /// [`DRIFT_NO_BETTER_CANDIDATE`]`{model}`.
    pub drift_no_better_candidate: IntCounterVec,
    /// [`HISTORY_IO_ERRORS`]`{op}`, op in [`HISTORY_IO_OPS`].
    pub history_io_errors: IntCounterVec,
    /// [`CHECKPOINTS_UNREADABLE`]`{kind}`, kind in [`CHECKPOINT_KINDS`].
    pub checkpoints_unreadable: IntCounterVec,
    /// [`LABEL_JOIN_EVICTED`]`{kind}`, kind in [`LABEL_JOIN_KINDS`].
    pub label_join_evicted: IntCounterVec,
}

/// The `kind` label values of [`CHECKPOINTS_UNREADABLE`].
pub const CHECKPOINT_KINDS: [&str; 2] = ["quality_state", "served_state"];

/// The `kind` label values of [`LABEL_JOIN_EVICTED`].
pub const LABEL_JOIN_KINDS: [&str; 2] = ["series", "bag"];

/// The `op` label values of [`HISTORY_IO_ERRORS`].
pub const HISTORY_IO_OPS: [&str; 2] = ["read", "write"];

impl Metrics {
    /// Pre-touches the label values the stages own, the dead-letter reason codes and the
    /// replay point's sources (`stream::pretouch_metrics` passes them), so those series
    /// exist at 0 from the first scrape as the others do.
    pub fn pretouch(&self, dead_letter_reasons: &[&str], replay_sources: &[&str]) {
        for reason in dead_letter_reasons {
            self.dead_letters.with_label_values(&[reason]);
        }
        for source in replay_sources {
            self.replay_point_source.with_label_values(&[source]);
        }
    }

    /// A fresh registry with every metric registered and every known label value at 0.
    pub fn new() -> Arc<Metrics> {
        let r = Registry::new();
        // process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...
        r.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))
        .expect(REGISTER);
        let metrics = Metrics {
            records_consumed: counter_vec_of(&r, RECORDS_CONSUMED, &["topic", "partition"]),
            consumer_lag: gauge_vec(&r, CONSUMER_LAG, &["topic", "partition"]),
            predictions: counter_vec_of(&r, PREDICTIONS_BY_LABEL, &["label", "model_version"]),
            sink_errors: counter_vec(&r, SINK_ERRORS, "sink"),
            sink_rows_refused: counter_vec_of(&r, SINK_ROWS_REFUSED, &["sink", "outcome"]),
            training_seconds: histogram(&r, TRAINING_SECONDS, &TRAINING_BUCKETS),
            model_info: gauge_vec(&r, MODEL_INFO, &["model", "model_version", "kind"]),
            serving: Default::default(),
            messages_consumed: counter_vec(&r, MESSAGES_CONSUMED, "topic"),
            dead_letters: counter_vec(&r, DEAD_LETTERS, "reason"),
            windows_scored: counter(&r, WINDOWS_SCORED),
            bags_scored: counter(&r, BAGS_SCORED),
            predictions_written: counter(&r, PREDICTIONS_WRITTEN),
            files_written: counter_vec(&r, FILES_WRITTEN, "sink"),
            bytes_written: counter_vec(&r, BYTES_WRITTEN, "sink"),
            rows_written: counter_vec(&r, ROWS_WRITTEN, "sink"),
            commits: counter(&r, COMMITS),
            commit_failures: counter(&r, COMMIT_FAILURES),
            duplicates_dropped: counter(&r, DUPLICATES_DROPPED),
            series_evicted: counter_vec(&r, SERIES_EVICTED, "cause"),
            live_series: gauge(&r, LIVE_SERIES),
            partitions_assigned: gauge(&r, PARTITIONS_ASSIGNED),
            partition_pauses: counter(&r, PARTITION_PAUSES),
            replayed_records: counter(&r, REPLAYED_RECORDS),
            files_swept: counter(&r, FILES_SWEPT),
            replay_point_source: counter_vec(&r, REPLAY_POINT_SOURCE, "source"),
            model_swaps: counter(&r, MODEL_SWAPS),
            training_runs: counter_vec_of(&r, TRAINING_RUNS, &["model", "outcome"]),
            training_failures: counter_vec_of(&r, TRAINING_FAILURES, &["model", "reason"]),
            training_examples: gauge_vec(&r, TRAINING_EXAMPLES, &["model"]),
            model_holdout_accuracy: float_gauge_vec(&r, MODEL_HOLDOUT_ACCURACY, &["model"]),
            consume_to_durable_seconds: histogram(
                &r,
                CONSUME_TO_DURABLE,
                &CONSUME_TO_DURABLE_BUCKETS,
            ),
            scoring_seconds: histogram(&r, SCORING, &SCORING_BUCKETS),
            labeled_predictions: counter_vec_of(&r, LABELED_PREDICTIONS, &MODEL_VERSION),
            correct_predictions: counter_vec_of(&r, CORRECT_PREDICTIONS, &MODEL_VERSION),
            confusion: counter_vec_of(
                &r,
                CONFUSION,
                &["model", "model_version", "label", "predicted"],
            ),
            model_accuracy: float_gauge_vec(&r, MODEL_ACCURACY, &MODEL_VERSION),
            drift_events: counter_vec_of(&r, DRIFT_EVENTS, &["model", "detector", "signal"]),
            drift_state: gauge_vec(&r, DRIFT_STATE, &["model"]),
            score_psi: float_gauge_vec(&r, SCORE_PSI, &["model"]),
            candidate_held: gauge_vec(&r, CANDIDATE_HELD, &["model"]),
            warning_candidates: counter_vec_of(&r, WARNING_CANDIDATES, &["model", "outcome"]),
            drift_no_better_candidate: counter_vec_of(&r, DRIFT_NO_BETTER_CANDIDATE, &["model"]),
            history_io_errors: counter_vec(&r, HISTORY_IO_ERRORS, "op"),
            checkpoints_unreadable: counter_vec(&r, CHECKPOINTS_UNREADABLE, "kind"),
            label_join_evicted: counter_vec(&r, LABEL_JOIN_EVICTED, "kind"),
            registry: r,
        };
        // Pre-touch the known label values so every series exists at 0 from the first scrape:
        // `rate()` and `increase()` then see the first increment instead of a series appearing.
        for op in HISTORY_IO_OPS {
            metrics.history_io_errors.with_label_values(&[op]);
        }
        for kind in CHECKPOINT_KINDS {
            metrics.checkpoints_unreadable.with_label_values(&[kind]);
        }
        for kind in LABEL_JOIN_KINDS {
            metrics.label_join_evicted.with_label_values(&[kind]);
        }
        for sink in SINKS.iter().chain(&["kafka"]) {
            metrics.sink_errors.with_label_values(&[sink]);
        }
        for outcome in ["shrunk", "left_out"] {
            metrics
                .sink_rows_refused
                .with_label_values(&["kafka", outcome]);
        }
        for sink in SINKS {
            metrics.files_written.with_label_values(&[sink]);
            metrics.bytes_written.with_label_values(&[sink]);
            metrics.rows_written.with_label_values(&[sink]);
        }
        for cause in EVICTION_CAUSES {
            metrics.series_evicted.with_label_values(&[cause]);
        }
        Arc::new(metrics)
    }

    /// Creates the per-topic series at 0. Topics are known only from the configuration, so
    /// the daemon calls this once per subscribed topic at start-up; until then the per-topic
    /// families are absent from the exposition (Prometheus omits a family without series).
    pub fn register_topic(&self, topic: &str) {
        self.messages_consumed.with_label_values(&[topic]);
    }

    /// Creates the per-model training series at 0 (model names come from the
    /// configuration, so the pipeline calls this once per model it trains).
    pub fn register_model(&self, model: &str) {
        for outcome in TRAINING_OUTCOMES {
            self.training_runs.with_label_values(&[model, outcome]);
        }
        for reason in TRAINING_FAILURE_REASONS {
            self.training_failures.with_label_values(&[model, reason]);
        }
        self.training_examples.with_label_values(&[model]);
        self.model_holdout_accuracy.with_label_values(&[model]);
        for detector in ["errors", "margin", "scores"] {
            for signal in ["warning", "drift"] {
                self.drift_events
                    .with_label_values(&[model, detector, signal]);
            }
        }
        self.drift_state.with_label_values(&[model]);
        self.score_psi.with_label_values(&[model]);
        self.candidate_held.with_label_values(&[model]);
        for outcome in WARNING_CANDIDATE_OUTCOMES {
            self.warning_candidates.with_label_values(&[model, outcome]);
        }
        self.drift_no_better_candidate.with_label_values(&[model]);
    }

    /// Marks `version` (of kind `kind`) as the one model `model` serves; that model's
    /// previous series goes, other models' stay.
    pub fn set_model_version(&self, model: &str, version: &str, kind: &str) {
        let mut serving = self
            .serving
            .lock()
            .expect("the serving-version map is never poisoned: no panic while held");
        if let Some((v, k)) = serving.insert(model.into(), (version.into(), kind.into())) {
            let _ = self.model_info.remove_label_values(&[model, &v, &k]);
        }
        self.model_info
            .with_label_values(&[model, version, kind])
            .set(1);
    }

    /// Records consumed from `topic`, all partitions.
    pub fn records_consumed_total(&self, topic: &str) -> u64 {
        use prometheus::core::Collector;
        self.records_consumed
            .collect()
            .iter()
            .flat_map(|mf| mf.get_metric())
            .filter(|m| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == "topic" && l.value() == topic)
            })
            .map(|m| m.get_counter().get_value() as u64)
            .sum()
    }

    /// Prometheus text exposition of everything registered.
    pub fn encode(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            // The encoder fails only on a family without series or without a name; `gather`
            // drops the former and every family here is created with a name.
            .expect("gathered metric families are named and non-empty")
    }
}

/// The help text of `name`: its constant's doc comment.
fn help(name: &str) -> String {
    HELP.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, h)| h.trim().to_owned())
        .expect("every metric name is declared in metric_names!")
}

// Registration fails only on an invalid or duplicate name; names are constants checked by the
// tests below, so a failure is a programming error caught by `Metrics::new` in any test.
const REGISTER: &str = "metric names are valid and registered once";

fn counter(r: &Registry, name: &str) -> IntCounter {
    let c = IntCounter::with_opts(Opts::new(name, help(name))).expect(REGISTER);
    r.register(Box::new(c.clone())).expect(REGISTER);
    c
}

fn counter_vec(r: &Registry, name: &str, label: &str) -> IntCounterVec {
    counter_vec_of(r, name, &[label])
}

fn counter_vec_of(r: &Registry, name: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help(name)), labels).expect(REGISTER);
    r.register(Box::new(c.clone())).expect(REGISTER);
    c
}

fn gauge_vec(r: &Registry, name: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help(name)), labels).expect(REGISTER);
    r.register(Box::new(g.clone())).expect(REGISTER);
    g
}

fn float_gauge_vec(r: &Registry, name: &str, labels: &[&str]) -> prometheus::GaugeVec {
    let g = prometheus::GaugeVec::new(Opts::new(name, help(name)), labels).expect(REGISTER);
    r.register(Box::new(g.clone())).expect(REGISTER);
    g
}

fn gauge(r: &Registry, name: &str) -> IntGauge {
    let g = IntGauge::with_opts(Opts::new(name, help(name))).expect(REGISTER);
    r.register(Box::new(g.clone())).expect(REGISTER);
    g
}

fn histogram(r: &Registry, name: &str, buckets: &[f64]) -> Histogram {
    let opts = HistogramOpts::new(name, help(name)).buckets(buckets.to_vec());
    let h = Histogram::with_opts(opts).expect(REGISTER);
    r.register(Box::new(h.clone())).expect(REGISTER);
    h
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::io::Write;
    use std::process::{Command, Stdio};

    use super::*;

    /// One parsed sample line: `name{labels} value`.
    struct Sample {
        name: String,
        labels: BTreeMap<String, String>,
        value: f64,
    }

    fn is_metric_name(s: &str) -> bool {
        let mut chars = s.chars();
        matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    fn parse_sample(line: &str) -> Sample {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("sample without value: {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|e| panic!("bad value in {line:?}: {e}"));
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => {
                let inner = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels: {line:?}"));
                let labels = inner
                    .split(',')
                    .filter(|pair| !pair.is_empty())
                    .map(|pair| {
                        let (k, v) = pair
                            .split_once('=')
                            .unwrap_or_else(|| panic!("bad label pair in {line:?}"));
                        assert!(is_metric_name(k), "bad label name in {line:?}");
                        let v = v
                            .strip_prefix('"')
                            .and_then(|v| v.strip_suffix('"'))
                            .unwrap_or_else(|| panic!("unquoted label value in {line:?}"));
                        (k.to_owned(), v.to_owned())
                    })
                    .collect();
                (name, labels)
            }
        };
        assert!(is_metric_name(name), "bad metric name in {line:?}");
        Sample {
            name: name.to_owned(),
            labels,
            value,
        }
    }

    /// Parses the exposition line by line; returns `TYPE` per family and all samples.
    fn parse(text: &str) -> (BTreeMap<String, String>, Vec<Sample>) {
        let mut types = BTreeMap::new();
        let mut helps = BTreeSet::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP has a name and a text");
                assert!(is_metric_name(name) && !help.is_empty(), "{line:?}");
                assert!(helps.insert(name.to_owned()), "duplicate HELP: {line:?}");
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE has a name and a kind");
                assert!(is_metric_name(name), "{line:?}");
                assert!(
                    ["counter", "gauge", "histogram"].contains(&kind),
                    "unexpected type: {line:?}"
                );
                assert!(
                    types.insert(name.to_owned(), kind.to_owned()).is_none(),
                    "duplicate TYPE: {line:?}"
                );
            } else {
                assert!(!line.starts_with('#'), "unexpected comment: {line:?}");
                samples.push(parse_sample(line));
            }
        }
        assert_eq!(
            helps,
            types.keys().cloned().collect(),
            "HELP and TYPE per family"
        );
        (types, samples)
    }

    /// The family a sample belongs to (histograms expose `_bucket`, `_sum`, `_count`).
    fn family<'a>(types: &BTreeMap<String, String>, sample: &'a str) -> &'a str {
        if types.contains_key(sample) {
            return sample;
        }
        ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| sample.strip_suffix(s))
            .find(|f| types.get(*f).map(String::as_str) == Some("histogram"))
            .unwrap_or_else(|| panic!("sample {sample} has no TYPE line"))
    }

    fn exposition() -> String {
        let m = Metrics::new();
        crate::stream::pretouch_metrics(&m);
        m.register_topic("points");
        m.encode()
    }

    #[test]
    fn names_follow_the_convention() {
        let names: BTreeSet<_> = HELP.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), HELP.len(), "names are unique");
        for (name, help) in HELP {
            assert!(name.starts_with("milstream_"), "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            let help = help.trim();
            assert!(
                !help.is_empty() && !help.contains('\n'),
                "{name}: one-line help"
            );
        }
        for values in [
            &crate::stream::dead_letter_reasons()[..],
            &SINKS[..],
            &EVICTION_CAUSES[..],
        ] {
            let set: BTreeSet<_> = values.iter().collect();
            assert_eq!(set.len(), values.len(), "label values are unique");
        }
    }

    #[test]
    fn exposition_has_every_metric_with_the_right_suffix() {
        let text = exposition();
        let (types, samples) = parse(&text);

        let declared: BTreeSet<&str> = HELP.iter().map(|(n, _)| *n).collect();
        let exposed: BTreeSet<&str> = types
            .keys()
            .map(String::as_str)
            .filter(|n| n.starts_with("milstream_"))
            .collect();
        // Families whose label values exist only at run time (partitions, labels, versions,
        // model names) have no series in a fresh registry; every other declared name is
        // exposed.
        let runtime_only: BTreeSet<&str> = [
            RECORDS_CONSUMED,
            CONSUMER_LAG,
            PREDICTIONS_BY_LABEL,
            MODEL_INFO,
            TRAINING_RUNS,
            TRAINING_FAILURES,
            TRAINING_EXAMPLES,
            MODEL_HOLDOUT_ACCURACY,
            LABELED_PREDICTIONS,
            CORRECT_PREDICTIONS,
            CONFUSION,
            MODEL_ACCURACY,
            DRIFT_EVENTS,
            DRIFT_STATE,
            SCORE_PSI,
            CANDIDATE_HELD,
            WARNING_CANDIDATES,
            DRIFT_NO_BETTER_CANDIDATE,
        ]
        .into();
        assert_eq!(
            declared
                .difference(&exposed)
                .copied()
                .collect::<BTreeSet<_>>(),
            runtime_only,
            "every declared name is exposed but the run-time-labelled ones"
        );
        assert!(exposed.is_subset(&declared), "nothing undeclared");
        assert!(types.contains_key("process_cpu_seconds_total"));
        assert!(types.contains_key("process_resident_memory_bytes"));

        for (name, kind) in &types {
            assert_eq!(
                name.ends_with("_total"),
                kind == "counter",
                "{name} is a {kind}: `_total` on counters only"
            );
        }
        assert_eq!(types[COMMITS], "counter");
        assert_eq!(types[LIVE_SERIES], "gauge");
        assert_eq!(types[SCORING], "histogram");
        assert_eq!(types[CONSUME_TO_DURABLE], "histogram");

        // The help text is the constant's doc comment.
        assert!(text.contains(&format!("# HELP {COMMITS} {}", help(COMMITS))));

        for s in samples.iter().filter(|s| s.name.starts_with("milstream_")) {
            family(&types, &s.name);
            assert_eq!(s.value, 0.0, "fresh registry: {} is 0", s.name);
        }
    }

    #[test]
    fn known_label_values_exist_at_zero() {
        let (_, samples) = parse(&exposition());
        let values = |name: &str, label: &str| -> BTreeSet<String> {
            samples
                .iter()
                .filter(|s| s.name == name)
                .map(|s| s.labels[label].clone())
                .collect()
        };
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            values(DEAD_LETTERS, "reason"),
            set(&crate::stream::dead_letter_reasons())
        );
        assert_eq!(values(FILES_WRITTEN, "sink"), set(&SINKS));
        assert_eq!(values(BYTES_WRITTEN, "sink"), set(&SINKS));
        assert_eq!(values(SERIES_EVICTED, "cause"), set(&EVICTION_CAUSES));
        assert_eq!(values(MESSAGES_CONSUMED, "topic"), set(&["points"]));
    }

    #[test]
    fn updates_show_up_and_buckets_span_the_ranges() {
        let m = Metrics::new();
        crate::stream::pretouch_metrics(&m);
        m.records_consumed
            .with_label_values(&["bags", "2"])
            .inc_by(3);
        m.dead_letters.with_label_values(&["late"]).inc();
        m.bytes_written.with_label_values(&["parquet"]).inc_by(4096);
        m.live_series.set(7);
        m.scoring_seconds.observe(3e-6);
        m.consume_to_durable_seconds.observe(0.2);
        let (_, samples) = parse(&m.encode());
        let get = |name: &str, labels: &[(&str, &str)]| -> f64 {
            samples
                .iter()
                .find(|s| {
                    s.name == name
                        && labels
                            .iter()
                            .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
                })
                .unwrap_or_else(|| panic!("no sample {name}{labels:?}"))
                .value
        };
        assert_eq!(
            get(RECORDS_CONSUMED, &[("topic", "bags"), ("partition", "2")]),
            3.0
        );
        assert_eq!(m.records_consumed_total("bags"), 3);
        assert_eq!(get(DEAD_LETTERS, &[("reason", "late")]), 1.0);
        assert_eq!(get(DEAD_LETTERS, &[("reason", "parse")]), 0.0);
        assert_eq!(get(BYTES_WRITTEN, &[("sink", "parquet")]), 4096.0);
        assert_eq!(get(LIVE_SERIES, &[]), 7.0);
        let scoring_bucket = format!("{SCORING}_bucket");
        assert_eq!(get(&scoring_bucket, &[("le", "0.000001")]), 0.0);
        assert_eq!(get(&scoring_bucket, &[("le", "0.000005")]), 1.0);
        assert_eq!(get(&scoring_bucket, &[("le", "0.1")]), 1.0);
        assert_eq!(get(&scoring_bucket, &[("le", "+Inf")]), 1.0);
        let durable_bucket = format!("{CONSUME_TO_DURABLE}_bucket");
        assert_eq!(get(&durable_bucket, &[("le", "0.001")]), 0.0);
        assert_eq!(get(&durable_bucket, &[("le", "0.25")]), 1.0);
        assert_eq!(get(&durable_bucket, &[("le", "10")]), 1.0);
        assert_eq!(get(&format!("{CONSUME_TO_DURABLE}_count"), &[]), 1.0);
    }

    #[test]
    fn registries_are_independent() {
        let a = Metrics::new();
        let b = Metrics::new();
        a.commits.inc();
        assert_eq!(a.commits.get(), 1);
        assert_eq!(b.commits.get(), 0);
        assert!(
            prometheus::gather()
                .iter()
                .all(|f| !f.name().starts_with("milstream_")),
            "the global registry holds none of ours"
        );
    }

    /// `promtool check metrics` (lint included) when promtool is installed; skipped otherwise.
    #[test]
    fn promtool_accepts_the_exposition() {
        let Some(promtool) = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("promtool"))
                .find(|p| p.is_file())
        }) else {
            eprintln!("promtool not on PATH: skipping `promtool check metrics`");
            return;
        };
        let mut child = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("promtool starts");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(exposition().as_bytes())
            .expect("write exposition to promtool");
        let out = child.wait_with_output().expect("promtool finishes");
        assert!(
            out.status.success(),
            "promtool check metrics failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
