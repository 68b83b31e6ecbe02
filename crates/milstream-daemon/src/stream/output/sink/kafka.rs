//! Kafka output: predictions and dead letters as JSON records on topics, keyed by the
//! prediction key. A segment counts as durable here only when every record is acknowledged.

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};

use super::Segment;
use crate::config::Config;

/// A producer's config: the bootstrap and every `kafka.properties` entry that is not a
/// consumer setting, with acks from all in-sync replicas.
pub fn producer_config(cfg: &Config, bootstrap: &str) -> ClientConfig {
    let mut pc = ClientConfig::new();
    pc.set("bootstrap.servers", bootstrap);
    for (k, v) in &cfg.kafka.properties {
        if !k.starts_with("group.") && !k.starts_with("session.") && !k.starts_with("enable.auto") {
            pc.set(k, v);
        }
    }
    pc.set("acks", "all");
    pc
}

/// Errors for which no retry can ever succeed: the record itself is what the client or the
/// broker refuses (larger than `message.max.bytes` or the topic's `max.message.bytes`).
fn is_permanent(e: &KafkaError) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(C::MessageSizeTooLarge | C::InvalidMessageSize | C::InvalidRecord)
    )
}

/// Why a record was not produced.
enum Refused {
    /// It can never be accepted: the caller shrinks or leaves it out.
    Permanent(String),
    /// Worth retrying (the broker is away, a timeout): the whole segment is retried.
    Transient(String),
}

/// Enqueues one record, waiting while librdkafka's queue is full.
async fn enqueue(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    body: &[u8],
) -> Result<DeliveryFuture, Refused> {
    loop {
        match producer.send_result(FutureRecord::to(topic).key(key).payload(body)) {
            Ok(f) => return Ok(f),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err((e, _)) if is_permanent(&e) => {
                return Err(Refused::Permanent(format!("producing to {topic}: {e}")))
            }
            Err((e, _)) => return Err(Refused::Transient(format!("producing to {topic}: {e}"))),
        }
    }
}

/// Produces one record and waits for its acknowledgement.
async fn produce_one(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    body: &[u8],
) -> Result<(), Refused> {
    match enqueue(producer, topic, key, body).await?.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((e, _))) if is_permanent(&e) => Err(Refused::Permanent(format!("delivery: {e}"))),
        Ok(Err((e, _))) => Err(Refused::Transient(format!("delivery failed: {e}"))),
        Err(_) => Err(Refused::Transient(
            "delivery cancelled: the producer was dropped".into(),
        )),
    }
}

/// One record of the segment for a topic: its key, its body, and the smaller body sent in
/// its place when the topic refuses it for good (the row's identity without its payload).
struct Outgoing {
    topic: String,
    key: String,
    body: Vec<u8>,
    shrunk: Vec<u8>,
}

/// The records of a segment for the two topics (an empty topic name: not produced).
fn outgoing(seg: &Segment, predictions_topic: &str, dead_letter_topic: &str) -> Vec<Outgoing> {
    let mut out = Vec::new();
    if !predictions_topic.is_empty() {
        for p in &seg.predictions {
            let shrunk = serde_json::json!({
                "key": truncated(&p.key), "kind": p.kind, "label": p.label,
                "window_start_ms": p.window_start_ms, "window_end_ms": p.window_end_ms,
                "model_name": p.model_name, "model_version": p.model_version,
                "source_topic": p.source_topic, "source_partition": p.source_partition,
                "source_offset": p.source_offset, "truncated": true,
            });
            out.push(Outgoing {
                topic: predictions_topic.to_string(),
                key: truncated(&p.key).to_string(),
                body: serde_json::to_vec(p).expect("a prediction row serializes"),
                shrunk: shrunk.to_string().into_bytes(),
            });
        }
    }
    if !dead_letter_topic.is_empty() {
        for d in &seg.dead_letters {
            let mut small = d.clone();
            small.raw_prefix.clear();
            small.detail = format!(
                "{} (truncated: too large for the topic)",
                truncated(&d.detail)
            );
            out.push(Outgoing {
                topic: dead_letter_topic.to_string(),
                key: format!("{}-{}-{}", d.topic, d.partition, d.offset),
                body: serde_json::to_vec(d).expect("a dead letter serializes"),
                shrunk: serde_json::to_vec(&small).expect("a dead letter serializes"),
            });
        }
    }
    out
}

/// At most 256 bytes of `s`, cut at a character boundary.
fn truncated(s: &str) -> &str {
    let mut end = s.len().min(256);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Produces a segment's rows and waits for every acknowledgement. A row the topic can never
/// accept goes in shrunk (its identity, no payload); if even that is refused it is left out
/// of the topic (it stays in the Parquet output). Returns how many rows were shrunk and how
/// many left out; an error (the segment is retried) only for what a retry can cure.
pub async fn produce_segment(
    producer: &FutureProducer,
    predictions_topic: &str,
    dead_letter_topic: &str,
    seg: &Segment,
) -> Result<Dropped, String> {
    let records = outgoing(seg, predictions_topic, dead_letter_topic);
    let mut pending = Vec::with_capacity(records.len());
    let mut refused = Vec::new();
    for (i, r) in records.iter().enumerate() {
        match enqueue(producer, &r.topic, &r.key, &r.body).await {
            Ok(f) => pending.push((i, f)),
            Err(Refused::Permanent(_)) => refused.push(i),
            Err(Refused::Transient(e)) => return Err(e),
        }
    }
    for (i, f) in pending {
        match f.await {
            Ok(Ok(_)) => {}
            Ok(Err((e, _))) if is_permanent(&e) => refused.push(i),
            Ok(Err((e, _))) => return Err(format!("delivery failed: {e}")),
            Err(_) => return Err("delivery cancelled: the producer was dropped".into()),
        }
    }
    let mut dropped = Dropped::default();
    for i in refused {
        let r = &records[i];
        match produce_one(producer, &r.topic, &r.key, &r.shrunk).await {
            Ok(()) => dropped.shrunk += 1,
            Err(Refused::Permanent(e)) => {
                tracing::error!(
                    topic = r.topic,
                    key = r.key,
                    error = e,
                    "a row the topic can never accept was left out of it"
                );
                dropped.left_out += 1;
            }
            Err(Refused::Transient(e)) => return Err(e),
        }
    }
    Ok(dropped)
}

/// Rows of a segment a topic refused for good.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    /// Sent shrunk in their place.
    pub shrunk: u64,
    /// Not sent at all.
    pub left_out: u64,
}
