//! The milstream daemon: Kafka in, windows and bags scored by the learning core, labels
//! joined and graded, predictions out to Parquet (local or object storage), Kafka or Arrow
//! IPC, models retrained and promoted, everything reported as Prometheus metrics.
//!
//! `config` is what a deployment says; `stream` holds the stages in the order data flows
//! (`ingest`, `score`, `join`, `output`, `quality`, `lifecycle`); `http` and `metrics` are
//! the ops endpoints. The learning core (`mil`, `data`, `drift`) is re-exported under the
//! names the stages use.
pub use milstream_core::{data, drift, mil};

pub mod config;
pub mod fuzzing;
pub mod http;
pub mod metrics;
pub mod stream;
