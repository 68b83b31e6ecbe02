//! The schema registry shared by the registry formats (Avro, `super::avro`; Protobuf,
//! `super::protobuf`): its client and cache, the Confluent wire format's framing (`wire`),
//! and the consumer's fetch of a message's schema before the message reaches its worker
//! (`prefetch`).
//!
//! Each writer schema id is fetched once over the Confluent REST API
//! (`GET /schemas/ids/{id}`), parsed as its `schemaType` says (Avro when absent, as the API
//! does) and resolved against our reader schemas for every record kind, and kept (at most
//! `max_schemas`, least recently used out first). A failed fetch is kept too, for
//! `failure_ttl_ms`: its messages are `schema` dead letters until the registry is asked again.
//!
//! The consumer [`SchemaRegistry::prefetch`]es the id of each message of a registry topic
//! before it hands the message to its worker (async, bounded by `timeout_ms` and
//! `retries`), so the workers' decoding only looks the id up: it never waits on the network.

pub mod prefetch;
pub mod wire;

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lru::LruCache;
use serde::Deserialize;
use tracing::{info, warn};

use crate::config::SchemaRegistryConfig;
use crate::stream::ingest::avro::reader::AvroSchema;
use crate::stream::ingest::protobuf::reader::ProtoSchema;
use crate::stream::ingest::record::{DeadReason, Rejected};

/// Largest registry answer read, in bytes: a schema is a few kilobytes.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The registry's `schemaType`s milstream reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaType {
    Avro,
    Protobuf,
}

impl SchemaType {
    /// As the registry names it.
    pub fn name(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Protobuf => "PROTOBUF",
        }
    }
}

/// A writer schema, parsed and resolved for each record kind in its own format.
#[derive(Debug)]
pub enum WriterSchema {
    Avro(AvroSchema),
    Protobuf(ProtoSchema),
}

impl WriterSchema {
    /// Parses the text of schema `id` of type `ty`.
    pub fn parse(id: u32, ty: SchemaType, text: &str) -> Result<Self, String> {
        match ty {
            SchemaType::Avro => AvroSchema::new(id, text)
                .map(Self::Avro)
                .map_err(|e| format!("schema id {id} is not a usable Avro schema: {e}")),
            SchemaType::Protobuf => ProtoSchema::new(id, text)
                .map(Self::Protobuf)
                .map_err(|e| format!("schema id {id} is not a usable Protobuf schema: {e}")),
        }
    }

    pub fn schema_type(&self) -> SchemaType {
        match self {
            WriterSchema::Avro(_) => SchemaType::Avro,
            WriterSchema::Protobuf(_) => SchemaType::Protobuf,
        }
    }

    /// The dead letter (`schema`) of a message of a `topic` topic whose schema `id` is this
    /// one, of another type.
    pub fn other_type(&self, id: u32, topic: SchemaType) -> Rejected {
        Rejected::new(
            DeadReason::Schema,
            format!(
                "schema id {id} is a {} schema; the topic is read as {}",
                self.schema_type().name(),
                topic.name()
            ),
        )
    }
}

/// What the cache holds for an id.
#[derive(Debug, Clone)]
pub enum Entry {
    Ready(Arc<WriterSchema>),
    /// The fetch failed (why), at that instant.
    Failed(Arc<str>, Instant),
}

struct Http {
    client: reqwest::Client,
    base: String,
    user: Option<(String, String)>,
    timeout: Duration,
    retries: u32,
}

/// The registry's client and the cache of its schemas.
pub struct SchemaRegistry {
    /// None: no registry to ask (only schemas [`SchemaRegistry::insert`]ed are known).
    http: Option<Http>,
    failure_ttl: Duration,
    cache: Mutex<LruCache<u32, Entry>>,
}

/// The answer of `GET /schemas/ids/{id}`.
#[derive(Deserialize)]
struct SchemaAnswer {
    schema: String,
    #[serde(rename = "schemaType", default)]
    schema_type: Option<String>,
}

impl SchemaRegistry {
    /// The client of `[schema_registry]`.
    pub fn new(cfg: &SchemaRegistryConfig) -> anyhow::Result<Self> {
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout);
        if !cfg.ca_file.is_empty() {
            let pem = std::fs::read(&cfg.ca_file)
                .map_err(|e| anyhow::anyhow!("schema_registry.ca_file {}: {e}", cfg.ca_file))?;
            for cert in reqwest::Certificate::from_pem_bundle(&pem)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = (!cfg.url.is_empty()).then(|| -> anyhow::Result<Http> {
            Ok(Http {
                client: builder.build()?,
                base: cfg.url.trim_end_matches('/').to_owned(),
                user: (!cfg.username.is_empty())
                    .then(|| (cfg.username.clone(), cfg.password.clone())),
                timeout,
                retries: cfg.retries,
            })
        });
        let mut registry = Self::offline(cfg.max_schemas);
        registry.http = http.transpose()?;
        registry.failure_ttl = Duration::from_millis(cfg.failure_ttl_ms);
        Ok(registry)
    }

    /// A cache with no registry behind it: only inserted schemas are known (benchmarks).
    pub fn offline(max_schemas: usize) -> Self {
        Self {
            http: None,
            failure_ttl: Duration::from_secs(30),
            cache: Mutex::new(LruCache::new(
                NonZeroUsize::new(max_schemas).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    /// Adds a schema by id, as if fetched.
    pub fn insert(&self, id: u32, ty: SchemaType, text: &str) -> Result<(), String> {
        let schema = WriterSchema::parse(id, ty, text)?;
        self.put(id, Entry::Ready(Arc::new(schema)));
        Ok(())
    }

    fn put(&self, id: u32, entry: Entry) {
        self.cache
            .lock()
            .expect("no panics under the lock")
            .put(id, entry);
    }

    /// What is known of `id`: None if it was never fetched (or was evicted since).
    pub fn lookup(&self, id: u32) -> Option<Entry> {
        self.cache
            .lock()
            .expect("no panics under the lock")
            .get(&id)
            .cloned()
    }

    /// The schema of `id` for decoding a message, or the message's dead letter (`schema`)
    /// when the id is unknown or could not be had.
    pub fn ready(&self, id: u32) -> Result<Arc<WriterSchema>, Rejected> {
        match self.lookup(id) {
            Some(Entry::Ready(schema)) => Ok(schema),
            Some(Entry::Failed(why, _)) => Err(Rejected::new(DeadReason::Schema, &*why)),
            None => Err(Rejected::new(
                DeadReason::Schema,
                format!("schema id {id} is not known (not fetched from the registry)"),
            )),
        }
    }

    /// Makes sure `id` is known: fetches it unless it is cached, or failed less than
    /// `failure_ttl_ms` ago. Takes at most `(retries + 1) * timeout_ms` (plus short pauses).
    pub async fn prefetch(&self, id: u32) {
        match self.lookup(id) {
            Some(Entry::Ready(_)) => return,
            Some(Entry::Failed(_, at)) if at.elapsed() < self.failure_ttl => return,
            _ => {}
        }
        let Some(http) = &self.http else {
            let why = format!("schema id {id} is unknown and no schema_registry.url is set");
            self.put(id, Entry::Failed(why.into(), Instant::now()));
            return;
        };
        let entry = match http
            .fetch(id)
            .await
            .and_then(|(ty, text)| WriterSchema::parse(id, ty, &text))
        {
            Ok(schema) => {
                info!(id, "schema fetched from the registry");
                Entry::Ready(Arc::new(schema))
            }
            Err(why) => {
                warn!(id, %why, "schema not available: its messages are dead letters");
                Entry::Failed(why.into(), Instant::now())
            }
        };
        self.put(id, entry);
    }
}

impl Http {
    /// The schema type and text of `id`, retrying connection errors, timeouts and 5xx
    /// answers.
    async fn fetch(&self, id: u32) -> Result<(SchemaType, String), String> {
        let mut last = String::new();
        for attempt in 0..=self.retries {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
            }
            match tokio::time::timeout(self.timeout, self.fetch_once(id)).await {
                Ok(Ok(text)) => return Ok(text),
                Ok(Err((why, true))) => return Err(why),
                Ok(Err((why, false))) => last = why,
                Err(_) => {
                    last = format!(
                        "the registry did not answer for schema id {id} within {} ms",
                        self.timeout.as_millis()
                    )
                }
            }
        }
        Err(format!("{last} (after {} attempts)", self.retries + 1))
    }

    /// One attempt: Err((why, final)), final for a 4xx answer or a bad body.
    async fn fetch_once(&self, id: u32) -> Result<(SchemaType, String), (String, bool)> {
        let url = format!("{}/schemas/ids/{id}", self.base);
        let mut req = self
            .client
            .get(&url)
            .header("Accept", "application/vnd.schemaregistry.v1+json");
        if let Some((user, password)) = &self.user {
            req = req.basic_auth(user, Some(password));
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| (format!("schema id {id}: the registry: {e}"), false))?;
        let status = resp.status();
        if !status.is_success() {
            let why = format!("schema id {id}: the registry answered {status}");
            return Err((why, status.is_client_error()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| (format!("schema id {id}: reading the answer: {e}"), false))?
        {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                let why = format!("schema id {id}: answer over {MAX_ANSWER_BYTES} bytes");
                return Err((why, true));
            }
            body.extend_from_slice(&chunk);
        }
        let answer: SchemaAnswer = serde_json::from_slice(&body)
            .map_err(|e| (format!("schema id {id}: not a registry answer: {e}"), true))?;
        match answer.schema_type.as_deref() {
            None | Some("AVRO") => Ok((SchemaType::Avro, answer.schema)),
            Some("PROTOBUF") => Ok((SchemaType::Protobuf, answer.schema)),
            Some(other) => Err((
                format!("schema id {id} is a {other} schema; milstream reads AVRO and PROTOBUF"),
                true,
            )),
        }
    }
}
