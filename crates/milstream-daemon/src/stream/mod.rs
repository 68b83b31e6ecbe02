//! The daemon: Kafka -> decode -> per-series windows -> scoring -> sinks -> commit.
//!
//! One folder per stage, in the order data flows (`docs/ARCHITECTURE.md` draws them):
//! [`ingest`] receives messages, routes them to the scoring workers, starts and stops
//! partitions on rebalances and commits what is durable; [`score`] decodes, windows and
//! scores each partition's messages in order and seals its outputs into segments; [`join`]
//! joins labels into training examples; [`output`] makes segments durable in every sink, in
//! order; [`quality`] grades the serving models on the labels and watches their inputs for
//! drift; [`lifecycle`] retrains, promotes and follows model versions off the hot path.
//! [`pipeline`] builds and stops the stages; [`daemon`] is the start-up around it.

// The stages, in the order data flows.
pub mod ingest;
pub mod join;
pub mod lifecycle;
pub mod output;
pub mod quality;
pub mod score;
pub mod view;

// Around them: start-up, the pipeline that runs them, the embedded default, the benchmark.
pub mod bench;
mod daemon;
pub mod embedded;
mod pipeline;

pub use daemon::{resolve_series_model, run, RunOptions};

use crate::metrics::Metrics;
use ingest::commit::ReplaySource;
use ingest::record::DeadReason;

/// Every `reason` label value of the dead-letter counter: the stages' reason codes.
pub fn dead_letter_reasons() -> [&'static str; DeadReason::ALL.len()] {
    DeadReason::ALL.map(|r| r.as_str())
}

/// Pre-touches the metric series the stages label with their own vocabularies (the
/// dead-letter reasons, the replay point's sources), so a new code needs no second list.
pub fn pretouch_metrics(metrics: &Metrics) {
    metrics.pretouch(
        &dead_letter_reasons(),
        &ReplaySource::ALL.map(|s| s.as_str()),
    );
}
