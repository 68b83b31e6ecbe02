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
    /// Protobuf in the Confluent wire format: a zero byte, the writer schema's 4-byte id in
    /// the schema registry (`[schema_registry]`), the message indexes, then one Protobuf
    /// record or a batch of them (`schemas/*.proto`).
    Protobuf,
}

impl InputFormat {
    /// Whether its messages name a writer schema in the schema registry.
    pub fn uses_registry(self) -> bool {
        matches!(self, InputFormat::Avro | InputFormat::Protobuf)
    }
}

/// The encoding of each input topic. A topic's records obey the same rules in every
/// format: an Avro or Protobuf record decodes to exactly the record its JSON form gives.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputConfig {
    /// Encoding of `kafka.points_topic`: json | avro | protobuf.
    pub points_format: InputFormat,
    /// Encoding of `kafka.bags_topic`: json | avro | protobuf.
    pub bags_format: InputFormat,
    /// Encoding of `kafka.labels_topic`: json | avro | protobuf.
    pub labels_format: InputFormat,
}

impl InputConfig {
    /// Whether any topic is Avro or Protobuf (and so needs `[schema_registry]`).
    pub fn uses_registry(&self) -> bool {
        [self.points_format, self.bags_format, self.labels_format]
            .iter()
            .any(|f| f.uses_registry())
    }
}
