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
