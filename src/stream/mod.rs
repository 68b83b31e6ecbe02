//! The daemon: Kafka -> decode -> per-series windows -> scoring -> sinks -> commit.
//!
//! The stages, in the order data flows (`docs/ARCHITECTURE.md` draws them):
//! [`consumer`] receives and routes messages to the scoring [`worker`]s, which decode,
//! window and score each partition's messages in order and seal its outputs into
//! segments; [`assignment`] handles rebalances (replay point, sweep, seek, final commit);
//! [`labels`] joins labels into training examples; the [`writer`]s make segments durable
//! in every sink, in order; the committer (in [`consumer`]) commits what is durable, with
//! the offset a replay must start from in the commit metadata. [`pipeline`] builds and
//! stops them; [`daemon`] is the start-up around it. Off the hot path, the [`trainer`] and
//! the [`models_topic`] follower swap models in [`serving`]; [`models`] names the models a
//! daemon serves and routes each series or bag id (and its labels) to one of them.

mod assignment;
pub mod bench;
pub mod commit;
mod consumer;
mod contribution;
mod daemon;
pub mod embedded;
pub mod history;
mod history_blocks;
mod history_index;
mod history_log;
mod holds;
pub mod label_free;
mod labels;
pub mod models;
pub mod models_topic;
mod pipeline;
pub mod quality;
pub mod record;
pub mod registry;
pub mod registry_poll;
pub mod serving;
pub mod sink;
pub mod store;
pub mod trainer;
pub mod training;
pub mod window;
mod worker;
mod worker_pool;
mod writer;

pub use daemon::{resolve_series_model, run, RunOptions};
