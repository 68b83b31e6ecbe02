//! Output: segments made durable in every sink, in order (`writer`), into the Parquet,
//! Arrow IPC and Kafka sinks and each partition's folder log (`sink`), on a local folder or
//! an object store (`store`); with `output.format = "delta"` the Parquet outputs are Delta
//! tables (`delta`).

pub mod arrow;
pub mod delta;
pub mod sink;
pub mod store;
pub(crate) mod writer;
