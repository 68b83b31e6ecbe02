//! Following the registry's `current`. In: `model.registry_dir` (a shared folder or an
//! object-store prefix), read every `model.registry_poll_ms`. Out: a swap of the serving
//! model whenever `current` names another version than the one served: a promotion or a
//! rollback (an operator pointing `current` back). Owns: the `milstream-registry` thread.
//!
//! Scorers on other machines share the trainer's registry on object storage; this is how
//! they pick up a promotion without the models topic. Where a model has a registry, its
//! `current` decides what is served: the models topic then only prompts an early read
//! (see `models_topic.rs`), so no record on the topic can hold a version in place.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use crate::config::Config;
use crate::stream::lifecycle::registry::Registry;
use crate::stream::score::serving::ServingModel;

/// The polling thread.
pub type RegistryPoller = super::StoppableThread;

/// Starts polling when a registry is configured, `registry_poll_ms` > 0 and this process
/// does not train itself (a trainer promotes its own versions).
pub fn spawn(
    cfg: &Config,
    trains: bool,
    models: Vec<(std::path::PathBuf, Arc<ServingModel>)>,
) -> anyhow::Result<Option<RegistryPoller>> {
    if models.is_empty() || trains || cfg.model.registry_poll_ms == 0 {
        return Ok(None);
    }
    let polled = open_registries(cfg, models)?;
    let every = Duration::from_millis(cfg.model.registry_poll_ms);
    let window_points = cfg.window.points;
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("milstream-registry".into())
            .spawn(move || {
                let mut next = Instant::now() + every;
                while !stop.load(Ordering::SeqCst) {
                    // Short sleeps, so shutdown does not wait for a whole interval.
                    if Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(50).min(every));
                        continue;
                    }
                    next = Instant::now() + every;
                    for (registry, serving) in &polled {
                        poll_once(registry, serving, window_points);
                    }
                }
            })?
    };
    Ok(Some(RegistryPoller::new(stop, thread)))
}

/// One registry per model (each named model keeps its own), opened.
pub fn open_registries(
    cfg: &Config,
    models: Vec<(std::path::PathBuf, Arc<ServingModel>)>,
) -> anyhow::Result<Vec<(Registry, Arc<ServingModel>)>> {
    models
        .into_iter()
        .map(|(dir, serving)| Ok((Registry::open_with(&dir, &cfg.object_store.0)?, serving)))
        .collect()
}

/// Reads `current` once; swaps to it when it is not the serving version (promoted or
/// rolled back) and the slot accepts it. Failures are logged and retried at the next poll.
pub fn poll_once(registry: &Registry, serving: &ServingModel, window_points: usize) {
    let version = match registry.current() {
        Ok(Some(v)) => v,
        Ok(None) => return,
        Err(e) => {
            warn!(
                error = format!("{e:#}"),
                "reading the registry's current version"
            );
            return;
        }
    };
    let serving_now = serving.load_full();
    if version == serving_now.version {
        return;
    }
    let model = match registry.load(&version) {
        Ok((m, _)) => m,
        Err(e) => {
            warn!(
                error = format!("{e:#}"),
                version, "registry: model does not load; skipped"
            );
            return;
        }
    };
    if let Err(e) = serving.accepts(&model, window_points) {
        warn!(%e, version, "registry: the model cannot serve here; skipped");
        return;
    }
    info!(
        version,
        from = serving_now.version,
        "swapping to the registry's current model"
    );
    serving.promote(model, version);
}
