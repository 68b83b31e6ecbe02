//! Ingest: what comes from Kafka and what goes back to it. The consumer receives each
//! message and routes it to its partition's worker (`consumer`), the wire records decode it
//! (`record`; in the Confluent wire format through a schema registry, `registry`: Avro,
//! `avro`, and Protobuf, `protobuf`), the rebalance callbacks start and stop partitions
//! (`assignment`: replay point, sweep, seek), and the committer commits what every sink
//! holds (`commit`).

pub(crate) mod assignment;
pub mod avro;
pub mod commit;
pub(crate) mod consumer;
pub mod position;
pub mod protobuf;
pub mod record;
pub mod registry;
