//! milstream: streaming multiple-instance learning.
//!
//! `mil` is the learning core (pure, synchronous); `data` reads the offline file formats;
//! `figure` draws explanations and `card` describes a saved model.
pub mod card;
pub mod config;
pub mod data;
pub mod drift;
pub mod figure;
pub mod fit_options;
pub mod fuzzing;
pub mod http;
pub mod metrics;
pub mod mil;
pub mod stream;
