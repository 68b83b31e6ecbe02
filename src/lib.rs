//! milstream: streaming multiple-instance learning.
//!
//! `mil` is the learning core (pure, synchronous); `data` reads the offline file formats.
pub mod data;
pub mod mil;
