//! Named models (`[[models]]`): what each takes, which ids, its artifact, registry, training
//! settings and fit parameters.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a model scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ModelInput {
    /// Windows of series (points).
    #[default]
    Series,
    /// Bag records.
    Bags,
}

/// One named model (`[[models]]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedModelConfig {
    /// Its name: the `model_name` of its rows, the `model` label of its metrics, its key on
    /// the models topic and its registry folder `<registry>/named/<name>/`.
    pub name: String,
    /// `series` (default) or `bags`.
    #[serde(default)]
    pub input: ModelInput,
    /// The series ids (or bag ids) it scores and learns from: a glob where `*` matches any
    /// run and `?` one character (`"pump-*"` is the prefix `pump-`). The first model whose
    /// route matches an id takes it; an id no model takes is a `no_model` dead letter.
    pub ids: String,
    /// Its artifact. Unset: trained at start from the bundled data (GunPoint for series,
    /// MUSK1 for bags), unless its registry has a `current` version.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The kind trained when there is no model yet (default: `model.kind`).
    #[serde(default)]
    pub kind: Option<crate::mil::model::ModelKind>,
    /// Its registry folder (default: `<registry>/named/<name>/`).
    #[serde(default)]
    pub registry_dir: Option<PathBuf>,
    /// Its own training settings over `[training]`'s.
    #[serde(default)]
    pub training: NamedTrainingConfig,
    /// Its fit parameters (`[models.params]`): the keys of a model artifact's `params`
    /// (`nu`, `lengths`, `k`, `stride`, `seed`, `svm = {..}`, `spaces = {..}`, ...) over the
    /// defaults of its kind and input. Set: its start-up training and every retrain fit with
    /// these. Unset: a retrain keeps the champion's kind and parameters.
    #[serde(default)]
    pub params: Option<toml::Table>,
}

impl NamedModelConfig {
    /// Its fit parameters, when `[models.params]` is set: its kind (`kind`, else
    /// `default_kind`) with the defaults for its input, and the table over them.
    pub fn fit_params(
        &self,
        default_kind: crate::mil::model::ModelKind,
    ) -> Result<Option<crate::mil::FitParams>, String> {
        let Some(table) = &self.params else {
            return Ok(None);
        };
        let base = match self.input {
            ModelInput::Series => crate::mil::FitParams::default(),
            ModelInput::Bags => crate::mil::FitParams::for_bags(),
        };
        let base = crate::mil::FitParams {
            kind: self.kind.unwrap_or(default_kind),
            ..base
        };
        let over = serde_json::to_value(table).map_err(|e| e.to_string())?;
        base.overlaid(&over).map(Some)
    }
}

/// A named model's training settings; unset keys take `[training]`'s.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedTrainingConfig {
    /// false: this model is never retrained (its labels are still stored).
    pub enabled: Option<bool>,
    /// Its `training.holdout`: the fraction of its newest examples held out to compare
    /// candidate and champion.
    pub holdout: Option<f64>,
    /// Its `training.tolerance`: how much lower a candidate's held-out accuracy may be than
    /// the champion's and still be promoted.
    pub tolerance: Option<f64>,
    /// Its `training.min_examples`: fewer of its examples and a run fails without training.
    pub min_examples: Option<usize>,
}
