//! milstream: streaming multiple-instance learning.
//!
//! The learning core is its own crate, `milstream-core` (`mil`, `data`, `drift`, re-exported
//! here under the same names); this crate is the daemon (`config`, `stream`, `http`,
//! `metrics`), what draws explanations (`figure`) and describes a saved model (`card`), and
//! the command line's fitting options.
pub use milstream_core::{data, drift, mil};

pub mod card;
pub mod config;
pub mod figure;
pub mod fit_options;
pub mod fuzzing;
pub mod http;
pub mod metrics;
pub mod stream;
