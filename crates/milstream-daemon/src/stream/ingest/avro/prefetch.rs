//! Which topics are Avro, and the consumer's fetch of their schema ids before a message
//! reaches its worker (so decoding never waits on the registry).

use std::sync::Arc;

use super::{schema_id, SchemaRegistry};
use crate::config::{Config, InputFormat};
use crate::stream::ingest::record::RecordKind;

/// The Avro topics of the configuration and the registry their ids are looked up in.
pub struct AvroInput {
    pub registry: Arc<SchemaRegistry>,
    /// The names of the Avro topics (at most three).
    topics: Vec<String>,
}

/// The format of the topic of `kind`.
pub fn format_of(cfg: &Config, kind: RecordKind) -> InputFormat {
    match kind {
        RecordKind::Point => cfg.input.points_format,
        RecordKind::Bag => cfg.input.bags_format,
        RecordKind::Label => cfg.input.labels_format,
    }
}

impl AvroInput {
    /// None when no topic is Avro.
    pub fn new(cfg: &Config) -> anyhow::Result<Option<Self>> {
        let k = &cfg.kafka;
        let topics: Vec<String> = [
            (&k.points_topic, RecordKind::Point),
            (&k.bags_topic, RecordKind::Bag),
            (&k.labels_topic, RecordKind::Label),
        ]
        .into_iter()
        .filter(|(t, kind)| !t.is_empty() && format_of(cfg, *kind) == InputFormat::Avro)
        .map(|(t, _)| t.clone())
        .collect();
        if topics.is_empty() {
            return Ok(None);
        }
        let registry = Arc::new(SchemaRegistry::new(&cfg.schema_registry)?);
        Ok(Some(Self { registry, topics }))
    }

    /// Fetches the schema of a message of `topic` if the topic is Avro and the id is new.
    pub async fn prefetch(&self, topic: &str, payload: &[u8]) {
        if !self.topics.iter().any(|t| t == topic) {
            return;
        }
        if let Some(id) = schema_id(payload) {
            self.registry.prefetch(id).await;
        }
    }
}
