//! milstream: streaming multiple-instance learning.
//!
//! This package is the command line (`src/main.rs`, `src/cli/`) and the integration tests
//! (`tests/`). The code lives in the workspace's crates, re-exported here under one name:
//! the learning core `milstream-core` (`mil`, `data`, `drift`: pure and synchronous), the
//! daemon `milstream-daemon` (`config`, `stream`, `http`, `metrics`, `fuzzing`) and
//! `milstream-tools` (`card`, `figure`, `fit_options`: what the command line and the Python
//! package share). Arrows go one way: tools and daemon over the core, never into each other.
pub use milstream_core::{data, drift, mil};
pub use milstream_daemon::{config, fuzzing, http, metrics, stream};
pub use milstream_tools::{card, figure, fit_options};
