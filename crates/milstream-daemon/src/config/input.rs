//! `[input]`: how each input topic's messages are encoded (`src/stream/ingest/`).

use serde::{Deserialize, Serialize};

/// How the messages of one input topic are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputFormat {
    /// One JSON record or a JSON array of records per message (`schemas/*.schema.json`).
    #[default]
    Json,
    /// Avro in the Confluent wire format: a zero byte, the writer schema's 4-byte id in the
    /// schema registry (`[schema_registry]`), then one binary Avro record or an array of
    /// them (`schemas/*.avsc`).
    Avro,
}

/// The encoding of each input topic. A topic's records obey the same rules in every
/// format: an Avro record decodes to exactly the record its JSON form gives.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputConfig {
    /// Encoding of `kafka.points_topic`: json | avro.
    pub points_format: InputFormat,
    /// Encoding of `kafka.bags_topic`: json | avro.
    pub bags_format: InputFormat,
    /// Encoding of `kafka.labels_topic`: json | avro.
    pub labels_format: InputFormat,
}

impl InputConfig {
    /// Whether any topic is Avro (and so needs `[schema_registry]`).
    pub fn any_avro(&self) -> bool {
        [self.points_format, self.bags_format, self.labels_format].contains(&InputFormat::Avro)
    }
}
