//! Which topics are read through the schema registry (Avro and Protobuf), and the
//! consumer's fetch of their schema ids before a message reaches its worker (so decoding
//! never waits on the registry).

use std::sync::Arc;

use super::wire::schema_id;
use super::SchemaRegistry;
use crate::config::{Config, InputFormat};
use crate::stream::ingest::record::RecordKind;

/// The registry topics of the configuration and the registry their ids are looked up in.
pub struct RegistryInput {
    pub registry: Arc<SchemaRegistry>,
    /// The names of the registry topics (at most three).
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

impl RegistryInput {
    /// None when no topic is read through the registry.
    pub fn new(cfg: &Config) -> anyhow::Result<Option<Self>> {
        let k = &cfg.kafka;
        let topics: Vec<String> = [
            (&k.points_topic, RecordKind::Point),
            (&k.bags_topic, RecordKind::Bag),
            (&k.labels_topic, RecordKind::Label),
        ]
        .into_iter()
        .filter(|(t, kind)| !t.is_empty() && format_of(cfg, *kind).uses_registry())
        .map(|(t, _)| t.clone())
        .collect();
        if topics.is_empty() {
            return Ok(None);
        }
        let registry = Arc::new(SchemaRegistry::new(&cfg.schema_registry)?);
        Ok(Some(Self { registry, topics }))
    }

    /// Fetches the schema of a message of `topic` if the topic is a registry topic and the
    /// id is new.
    pub async fn prefetch(&self, topic: &str, payload: &[u8]) {
        if !self.topics.iter().any(|t| t == topic) {
            return;
        }
        if let Some(id) = schema_id(payload) {
            self.registry.prefetch(id).await;
        }
    }
}
