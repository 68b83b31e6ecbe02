//! milstream: streaming multiple-instance learning.
//!
//! `mil` is the learning core (pure, synchronous); `data` reads the offline file formats.
pub mod config;
pub mod data;
pub mod http;
pub mod metrics;
pub mod mil;
pub mod stream;
