//! The model in service. In: the start-up model, then promoted or followed versions. Out:
//! the current model for every window the workers score. Owns: the hot-swappable slot.
//!
//! This is the interface the trainer and the models-topic follower get from the pipeline:
//! they swap models here and never import the pipeline's stages.

use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use crate::metrics::Metrics;
use crate::mil::Model;
use crate::stream::score::window::ScoringModel;

/// One named model the scoring workers read (the series model, the bag model), swapped
/// atomically.
pub struct ServingModel {
    /// The model's name: its key on the models topic, its `model` metric label and the
    /// `model_name` of its prediction rows.
    pub name: String,
    current: ArcSwap<ScoringModel>,
    metrics: Arc<Metrics>,
}

impl ServingModel {
    pub fn new(name: &str, initial: Arc<ScoringModel>, metrics: Arc<Metrics>) -> Self {
        metrics.set_model_version(name, &initial.version, initial.model.kind().name());
        Self {
            name: name.to_string(),
            current: ArcSwap::new(initial),
            metrics,
        }
    }

    /// The model in service, cheaply (the hot path: once per message).
    pub fn load(&self) -> Guard<Arc<ScoringModel>> {
        self.current.load()
    }

    /// The model in service, to keep.
    pub fn load_full(&self) -> Arc<ScoringModel> {
        self.current.load_full()
    }

    /// Whether `model` may take this slot: a series model must fit the window
    /// (`window_points`), a bag model must take the bags the serving one takes. The one
    /// check every path that swaps a model (registry, models topic, the trainer's promotion)
    /// makes first.
    pub fn accepts(&self, model: &Model, window_points: usize) -> Result<(), String> {
        let current = self.current.load();
        if current.model.input().is_series() {
            crate::mil::online::incremental::WindowScorer::new(model, window_points)
                .map(|_| ())
                .map_err(|e| format!("the model does not fit the window: {e}"))
        } else if model.input() != current.model.input() {
            Err("a bag model of another input than the one it would replace".into())
        } else {
            Ok(())
        }
    }

    /// Swaps the serving model; series rebuild their scorers from their kept points at their
    /// next window, so no window is dropped.
    pub fn promote(&self, model: Model, version: String) {
        let old = self.current.load_full();
        self.metrics
            .set_model_version(&self.name, &version, model.kind().name());
        self.current.store(Arc::new(ScoringModel {
            model,
            version,
            generation: old.generation + 1,
        }));
        self.metrics.model_swaps.inc();
    }
}
