//! `[schema_registry]`: where the writer schemas of Avro and Protobuf input come from
//! (`src/stream/ingest/registry/`).

use serde::{Deserialize, Serialize};

/// The Confluent-compatible schema registry that Avro and Protobuf messages' schema ids name
/// (Confluent Schema Registry, Confluent Cloud, Redpanda, Karapace, Apicurio's Confluent
/// API: anything that serves `GET /schemas/ids/{id}`). Each id is
/// fetched once (`GET /schemas/ids/{id}`) and kept; a message whose schema cannot be had is
/// a `schema` dead letter, never a stall.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchemaRegistryConfig {
    /// Base URL, e.g. `http://registry:8081` or `https://psrc-xxxx.confluent.cloud`. Needed
    /// when a topic of `[input]` is Avro or Protobuf.
    pub url: String,
    /// HTTP basic-auth user (Confluent Cloud: the API key); empty = no authentication.
    pub username: String,
    /// HTTP basic-auth password (Confluent Cloud: the API secret). Give it from the
    /// environment, e.g. `password = "${SCHEMA_REGISTRY_PASSWORD}"`; never shown in logs.
    #[serde(serialize_with = "redacted")]
    pub password: String,
    /// PEM file of extra CA certificates to trust for an `https` URL (beside the system's).
    /// Empty = the system's roots only.
    pub ca_file: String,
    /// Longest wait for one answer of the registry, in ms.
    pub timeout_ms: u64,
    /// Further attempts after a failed fetch (a connection error, a timeout or a 5xx; a 404
    /// is final). While they last, the consumer waits: at most
    /// `(retries + 1) * timeout_ms` per new schema id.
    pub retries: u32,
    /// After a fetch failed, how long messages of that schema id are dead letters before
    /// the registry is asked again, in ms.
    pub failure_ttl_ms: u64,
    /// Schemas kept at most; the least recently used leave first.
    pub max_schemas: usize,
}

fn redacted<S: serde::Serializer>(v: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if v.is_empty() { "" } else { "<redacted>" })
}

impl std::fmt::Debug for SchemaRegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaRegistryConfig")
            .field("url", &self.url)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("ca_file", &self.ca_file)
            .field("timeout_ms", &self.timeout_ms)
            .field("retries", &self.retries)
            .field("failure_ttl_ms", &self.failure_ttl_ms)
            .field("max_schemas", &self.max_schemas)
            .finish()
    }
}

impl Default for SchemaRegistryConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            username: String::new(),
            password: String::new(),
            ca_file: String::new(),
            timeout_ms: 5_000,
            retries: 2,
            failure_ttl_ms: 30_000,
            max_schemas: 1_000,
        }
    }
}

impl SchemaRegistryConfig {
    /// A URL when `needed` (an Avro topic), and sane bounds.
    pub(super) fn validate(&self, needed: bool) -> Result<(), (&'static str, String)> {
        if needed && self.url.is_empty() {
            return Err((
                "schema_registry.url",
                "an [input] topic is avro or protobuf: the schema registry's URL is needed".into(),
            ));
        }
        if !self.url.is_empty() {
            match url::Url::parse(&self.url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                Ok(u) => {
                    return Err((
                        "schema_registry.url",
                        format!("must be http or https, got {}", u.scheme()),
                    ))
                }
                Err(e) => return Err(("schema_registry.url", e.to_string())),
            }
        }
        if self.timeout_ms == 0 {
            return Err(("schema_registry.timeout_ms", "must be >= 1".into()));
        }
        if self.max_schemas == 0 {
            return Err(("schema_registry.max_schemas", "must be >= 1".into()));
        }
        if self.retries > 10 {
            return Err((
                "schema_registry.retries",
                format!("must be <= 10, got {}", self.retries),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn avro_needs_a_registry_url_and_the_password_stays_hidden() {
        let err = |text: &str| Config::parse("t.toml", text).unwrap_err().to_string();
        let e = err("[input]\npoints_format = \"avro\"\n");
        assert!(e.contains("schema_registry.url"), "{e}");
        let e = err("[input]\nbags_format = \"protobuf\"\n");
        assert!(e.contains("schema_registry.url"), "{e}");
        let e = err("[input]\nbags_format = \"thrift\"\n");
        assert!(e.contains("input.bags_format"), "{e}");
        let e = err("[schema_registry]\nurl = \"ftp://r\"\n");
        assert!(e.contains("must be http or https"), "{e}");
        let cfg = Config::parse(
            "t.toml",
            "[input]\nlabels_format = \"avro\"\n[schema_registry]\nurl = \"http://r:8081\"\n\
             username = \"u\"\npassword = \"hunter22\"\n",
        )
        .unwrap();
        assert_eq!(cfg.schema_registry.password, "hunter22");
        assert!(!format!("{cfg:?}").contains("hunter22"));
        assert!(!toml::to_string(&cfg).unwrap().contains("hunter22"));
    }
}
