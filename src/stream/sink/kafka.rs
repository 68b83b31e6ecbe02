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

/// Enqueues one record, waiting while librdkafka's queue is full.
async fn enqueue(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    body: &[u8],
) -> Result<DeliveryFuture, String> {
    loop {
        match producer.send_result(FutureRecord::to(topic).key(key).payload(body)) {
            Ok(f) => return Ok(f),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err((e, _)) => return Err(format!("producing to {topic}: {e}")),
        }
    }
}

/// Produces a segment's rows and waits for every acknowledgement.
pub async fn produce_segment(
    producer: &FutureProducer,
    predictions_topic: &str,
    dead_letter_topic: &str,
    seg: &Segment,
) -> Result<(), String> {
    let mut pending = Vec::new();
    if !predictions_topic.is_empty() {
        for p in &seg.predictions {
            let body = serde_json::to_vec(p).map_err(|e| e.to_string())?;
            pending.push(enqueue(producer, predictions_topic, &p.key, &body).await?);
        }
    }
    if !dead_letter_topic.is_empty() {
        for d in &seg.dead_letters {
            let body = serde_json::to_vec(d).map_err(|e| e.to_string())?;
            let key = format!("{}-{}-{}", d.topic, d.partition, d.offset);
            pending.push(enqueue(producer, dead_letter_topic, &key, &body).await?);
        }
    }
    for f in pending {
        match f.await {
            Ok(Ok(_)) => {}
            Ok(Err((e, _))) => return Err(format!("delivery failed: {e}")),
            Err(_) => return Err("delivery cancelled: the producer was dropped".into()),
        }
    }
    Ok(())
}
