//! Scoring: each partition's messages, in order, decoded into per-series windows and scored
//! by the model serving their id (`worker`, on the threads of `worker_pool`; `window`),
//! with each prediction's top contributions (`contribution`); the named models and their
//! routes (`models`), and the model in service, swapped without a pause (`serving`).

pub(crate) mod contribution;
pub mod models;
pub mod serving;
pub mod window;
pub(crate) mod worker;
pub(crate) mod worker_pool;
