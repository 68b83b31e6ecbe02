//! The models topic: trainers publish every promoted model to a compacted topic keyed by
//! the model's name (`model.name`, `model.bags_name`); scorers read it from the beginning
//! (so a restart finds the latest). A record is
//! `{"name":..,"version":..,"card":{..},"model":{<artifact>}}`.
//!
//! What a scorer serves: where the model has a registry, the registry's `current` (a record
//! prompts an early read of it, see `registry_poll.rs`), so a rollback there reaches every
//! scorer; without one, the latest record of its name, in the topic's order. Never "the
//! highest version number": one record named `v999999999-x` would then block every later
//! promotion, for good, on a compacted topic.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde::Deserialize;
use tracing::{info, warn};

use crate::config::{Config, Role};
use crate::mil::Model;
use crate::stream::lifecycle::registry::{ModelCard, Registry};
use crate::stream::lifecycle::registry_poll::poll_once;
use crate::stream::output::sink::kafka::producer_config;
use crate::stream::score::serving::ServingModel;

/// Publishes a promoted model; waits for the broker's acknowledgement.
pub fn publish(
    cfg: &Config,
    bootstrap: &str,
    name: &str,
    version: &str,
    model: &Model,
    card: &ModelCard,
) -> anyhow::Result<()> {
    let topic = &cfg.kafka.models_topic;
    if topic.is_empty() {
        return Ok(());
    }
    let payload = format!(
        r#"{{"name":{},"version":{},"card":{},"model":{}}}"#,
        serde_json::to_string(name)?,
        serde_json::to_string(version)?,
        serde_json::to_string(card)?,
        model.to_json()
    );
    let p: BaseProducer = producer_config(cfg, bootstrap).create()?;
    p.send(BaseRecord::to(topic).key(name).payload(&payload))
        .map_err(|(e, _)| {
            anyhow::anyhow!("producing model {version} ({} bytes): {e}", payload.len())
        })?;
    p.flush(Duration::from_secs(30))
        .map_err(|e| anyhow::anyhow!("publishing model {version}: {e}"))?;
    info!(
        version,
        topic,
        bytes = payload.len(),
        "model published to the models topic"
    );
    Ok(())
}

#[derive(Deserialize)]
struct Published {
    name: String,
    version: String,
    model: serde_json::Value,
}

/// The follower thread of a scorer.
pub type Follower = super::StoppableThread;

/// Follows the models topic (roles scorer and all) when one is configured: each model in
/// `serving` follows the records of its name, through its registry when it has one (see
/// the module's doc).
pub fn follow(
    cfg: &Config,
    bootstrap: &str,
    serving: Vec<(Arc<ServingModel>, Option<Registry>)>,
) -> anyhow::Result<Option<Follower>> {
    let topic = cfg.kafka.models_topic.clone();
    if topic.is_empty() || cfg.pipeline.role == Role::Trainer {
        return Ok(None);
    }
    let mut cc = ClientConfig::new();
    cc.set("bootstrap.servers", bootstrap);
    for (k, v) in &cfg.kafka.properties {
        if !k.starts_with("group.") && !k.starts_with("enable.auto") {
            cc.set(k, v);
        }
    }
    // No group: every scorer reads the whole topic; nothing is committed.
    cc.set("enable.auto.commit", "false")
        .set("group.id", format!("{}.models", cfg.kafka.group_id))
        .set("enable.partition.eof", "false");
    let consumer: BaseConsumer = cc.create()?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        let window_points = cfg.window.points;
        std::thread::Builder::new()
            .name("milstream-models".into())
            .spawn(move || {
                let want = Wanted {
                    serving,
                    window_points,
                    topic,
                };
                follow_loop(&want, consumer, stop)
            })?
    };
    Ok(Some(Follower::new(stop, thread)))
}

fn assign_all(consumer: &BaseConsumer, topic: &str) -> bool {
    let Ok(md) = consumer.fetch_metadata(Some(topic), Duration::from_secs(5)) else {
        return false;
    };
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else {
        return false;
    };
    if t.partitions().is_empty() {
        return false;
    }
    let mut tpl = TopicPartitionList::new();
    for p in t.partitions() {
        let _ = tpl.add_partition_offset(topic, p.id(), Offset::Beginning);
    }
    consumer.assign(&tpl).is_ok()
}

/// What the follower takes from the models topic.
struct Wanted {
    /// Every model this process serves, each following the records of its name (through
    /// its registry, when it has one); records of other names are skipped.
    serving: Vec<(Arc<ServingModel>, Option<Registry>)>,
    /// `window.points`: a model whose shapelets do not fit the window is skipped.
    window_points: usize,
    topic: String,
}

fn follow_loop(want: &Wanted, consumer: BaseConsumer, stop: Arc<AtomicBool>) {
    let mut assigned = false;
    while !stop.load(Ordering::SeqCst) {
        if !assigned {
            assigned = assign_all(&consumer, &want.topic);
            if !assigned {
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
        }
        let Some(msg) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let msg = match msg {
            Ok(m) => m,
            Err(e) => {
                warn!(%e, "models topic");
                continue;
            }
        };
        let Some(payload) = msg.payload() else {
            continue;
        };
        let published: Published = match serde_json::from_slice(payload) {
            Ok(p) => p,
            Err(e) => {
                warn!(%e, offset = msg.offset(), "models topic: not a model record; skipped");
                continue;
            }
        };
        let Some((serving, registry)) = want.serving.iter().find(|s| s.0.name == published.name)
        else {
            continue;
        };
        if let Some(registry) = registry {
            poll_once(registry, serving, want.window_points);
            continue;
        }
        let current = serving.load_full();
        if published.version == current.version {
            continue;
        }
        let model = match Model::from_json(&published.model.to_string()) {
            Ok(m) => m,
            Err(e) => {
                warn!(%e, version = published.version, "models topic: model does not load; skipped");
                continue;
            }
        };
        if let Err(e) = serving.accepts(&model, want.window_points) {
            warn!(%e, version = published.version, "models topic: the model cannot serve here; skipped");
            continue;
        }
        info!(
            version = published.version,
            from = current.version,
            "swapping to a model from the models topic"
        );
        serving.promote(model, published.version);
    }
}
