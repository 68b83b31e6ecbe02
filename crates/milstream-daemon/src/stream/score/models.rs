//! The models a daemon serves, by name, and which ids each takes. In: the config and each
//! model's start-up version. Out: for a series id or bag id, the model that scores it and
//! learns from its labels (workers, label joins and the trainer ask the same question, so a
//! label always reaches the model that scores its id). Owns: the routing rules.
//!
//! Without `[[models]]` the `[model]` table is two unnamed entries that take every id: the
//! series model (`model.name`) and the bag model (`model.bags_name`).
//!
//! A record's `model` field names its model outright and takes precedence over the routes;
//! a name that is no model's, or a model of the other input, makes the record a `no_model`
//! dead letter naming it.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{Config, ModelInput, NamedModelConfig, TrainingConfig};
use crate::metrics::Metrics;
use crate::mil::model::ModelKind;
use crate::mil::FitParams;
use crate::stream::score::serving::ServingModel;
use crate::stream::score::window::ScoringModel;

/// Which ids a model takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Every id (the `[model]` table's models).
    All,
    /// A glob: `*` matches any run of characters, `?` one character.
    Glob(IdGlob),
}

impl Route {
    pub fn matches(&self, id: &str) -> bool {
        match self {
            Route::All => true,
            Route::Glob(g) => g.matcher.matches(id),
        }
    }
}

/// A `[[models]]` entry's `ids`, compiled once (wildmatch: `*` any run of characters, `/`
/// included; `?` one character, not one byte; nothing else is special).
#[derive(Debug, Clone)]
pub struct IdGlob {
    pattern: String,
    matcher: wildmatch::WildMatch,
}

impl IdGlob {
    pub fn new(pattern: &str) -> Self {
        IdGlob {
            pattern: pattern.to_string(),
            matcher: wildmatch::WildMatch::new(pattern),
        }
    }
}

impl PartialEq for IdGlob {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

impl std::fmt::Display for IdGlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// What a model is before it has a version: its name, input, route, where it comes from and
/// how it is retrained.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub name: String,
    pub input: ModelInput,
    pub route: Route,
    /// Its artifact (None: its registry's current, else trained from the bundled data).
    pub path: Option<PathBuf>,
    /// The kind trained when there is no model yet.
    pub kind: ModelKind,
    pub registry_dir: Option<PathBuf>,
    /// `[training]` with the model's own settings over it.
    pub training: TrainingConfig,
    /// Its configured fit parameters (`[models.params]`): every fit of it uses them. None:
    /// the kind's defaults at start, the champion's parameters on a retrain.
    pub params: Option<FitParams>,
}

/// The models the config names, in routing order.
pub fn specs(cfg: &Config) -> Vec<ModelSpec> {
    if cfg.models.is_empty() {
        let mut v = vec![ModelSpec {
            name: cfg.model.name.clone(),
            input: ModelInput::Series,
            route: Route::All,
            path: cfg.model.series_path.clone(),
            kind: cfg.model.kind,
            registry_dir: cfg.registry_dir(),
            training: cfg.training.clone(),
            params: None,
        }];
        if !cfg.kafka.bags_topic.is_empty() {
            v.push(ModelSpec {
                name: cfg.model.bags_name.clone(),
                input: ModelInput::Bags,
                route: Route::All,
                path: cfg.model.bags_path.clone(),
                kind: cfg.model.kind,
                registry_dir: cfg.bag_registry_dir(),
                training: cfg.training.clone(),
                params: None,
            });
        }
        return v;
    }
    cfg.models.iter().map(|m| named_spec(cfg, m)).collect()
}

fn named_spec(cfg: &Config, m: &NamedModelConfig) -> ModelSpec {
    let mut training = cfg.training.clone();
    let own = &m.training;
    training.holdout = own.holdout.unwrap_or(training.holdout);
    training.tolerance = own.tolerance.unwrap_or(training.tolerance);
    training.min_examples = own.min_examples.unwrap_or(training.min_examples);
    if own.enabled == Some(false) {
        // Never due: no schedule and no example count.
        training.every = String::new();
        training.after_examples = 0;
    }
    ModelSpec {
        name: m.name.clone(),
        input: m.input,
        route: Route::Glob(IdGlob::new(&m.ids)),
        path: m.path.clone(),
        kind: m.kind.unwrap_or(cfg.model.kind),
        registry_dir: cfg.named_registry_dir(m),
        training,
        params: m
            .fit_params(cfg.model.kind)
            .expect("[models.params] is checked when the config loads"),
    }
}

fn input_name(input: ModelInput) -> &'static str {
    match input {
        ModelInput::Series => "series",
        ModelInput::Bags => "bag",
    }
}

/// One model in service.
pub struct ServedModel {
    pub spec: ModelSpec,
    pub serving: Arc<ServingModel>,
}

/// Every model in service, in routing order.
pub struct Models {
    pub all: Vec<ServedModel>,
}

impl Models {
    /// Puts each spec's start-up model in service.
    pub fn new(start: Vec<(ModelSpec, Arc<ScoringModel>)>, metrics: &Arc<Metrics>) -> Self {
        let all = start
            .into_iter()
            .map(|(spec, model)| {
                metrics.register_model(&spec.name);
                let serving = Arc::new(ServingModel::new(&spec.name, model, metrics.clone()));
                ServedModel { spec, serving }
            })
            .collect();
        Self { all }
    }

    /// The model that takes `id` of `input`: the first whose route matches.
    pub fn route(&self, input: ModelInput, id: &str) -> Option<&ServedModel> {
        self.all
            .iter()
            .find(|m| m.spec.input == input && m.spec.route.matches(id))
    }

    /// The model that takes a record of `input` with id `id` whose `model` field is `named`:
    /// the model of that name, else the first whose route matches. Err: why it has none,
    /// for its `no_model` dead letter.
    pub fn route_record(
        &self,
        input: ModelInput,
        id: &str,
        named: Option<&str>,
    ) -> Result<&ServedModel, String> {
        let Some(name) = named else {
            return self
                .route(input, id)
                .ok_or_else(|| self.no_model(input, id));
        };
        match self.all.iter().find(|m| m.spec.name == name) {
            Some(m) if m.spec.input == input => Ok(m),
            Some(m) => Err(format!(
                "{} '{id}' names model '{name}', which takes {} records",
                input_name(input),
                input_name(m.spec.input)
            )),
            None => Err(format!(
                "{} '{id}' names model '{name}', which is no model of this daemon (models: {})",
                input_name(input),
                self.all
                    .iter()
                    .map(|m| m.spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Whether the stored example of `input` with id `id`, attributed to model `named`,
    /// belongs to `model`'s training data. Examples of stores from before the attribution
    /// (no `model` column) go by the id routes, as they were routed then.
    pub fn owns_example(
        &self,
        model: &str,
        input: ModelInput,
        id: &str,
        named: Option<&str>,
    ) -> bool {
        match named {
            Some(n) => n == model,
            None => self.route(input, id).is_some_and(|m| m.spec.name == model),
        }
    }

    /// Why `id` has no model, for its dead letter.
    pub fn no_model(&self, input: ModelInput, id: &str) -> String {
        let (what, routes): (&str, Vec<String>) = (
            input_name(input),
            self.all
                .iter()
                .filter(|m| m.spec.input == input)
                .map(|m| match &m.spec.route {
                    Route::All => format!("{} (every id)", m.spec.name),
                    Route::Glob(g) => format!("{} ({g})", m.spec.name),
                })
                .collect(),
        );
        if routes.is_empty() {
            format!("{what} '{id}': no model of this daemon takes {what} records")
        } else {
            format!(
                "{what} '{id}' matches no model's ids: {}",
                routes.join(", ")
            )
        }
    }

    /// Every serving slot (for the models-topic follower).
    pub fn serving(&self) -> Vec<Arc<ServingModel>> {
        self.all.iter().map(|m| m.serving.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_prefixes_and_patterns() {
        let g = |p: &str| Route::Glob(IdGlob::new(p));
        assert!(g("pump-*").matches("pump-7"));
        assert!(g("pump-*").matches("pump-"));
        assert!(!g("pump-*").matches("fan-1"));
        assert!(g("*-7").matches("pump-7"));
        assert!(!g("*-7").matches("pump-77x"));
        assert!(g("site?/*/temp").matches("site3/line-2/temp"));
        assert!(!g("site?/*/temp").matches("site33/line-2/temp"));
        assert!(g("a*b*c").matches("aXXbYYbc"));
        assert!(!g("a*b*c").matches("aXXbYY"));
        assert!(g("exact").matches("exact") && !g("exact").matches("exactly"));
        assert!(Route::All.matches("anything"));
        // `?` is one character, not one byte.
        assert!(g("pumpe-?").matches("pumpe-\u{e9}"));
        assert!(g("\u{fc}ber-?").matches("\u{fc}ber-7"));
        assert!(!g("pumpe-?").matches("pumpe-\u{e9}\u{e9}"));
        assert!(g("pump-[1]").matches("pump-[1]"), "brackets are literal");
    }

    #[test]
    fn the_first_matching_model_of_the_input_takes_an_id() {
        let cfg = Config::parse(
            "test",
            "[[models]]\nname = \"pumps\"\nids = \"pump-*\"\n\
             [[models]]\nname = \"all-series\"\nids = \"*\"\n\
             [[models]]\nname = \"molecules\"\ninput = \"bags\"\nids = \"mol-*\"\n\
             [models.training]\nholdout = 0.5\n",
        )
        .unwrap();
        let specs = specs(&cfg);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pumps", "all-series", "molecules"]);
        assert_eq!(specs[2].training.holdout, 0.5);
        assert_eq!(specs[0].training.holdout, cfg.training.holdout);
        let model = Arc::new(ScoringModel {
            model: crate::stream::embedded::train_embedded_model().unwrap(),
            version: "v".into(),
            generation: 1,
        });
        let models = Models::new(
            specs.into_iter().map(|s| (s, model.clone())).collect(),
            &Metrics::new(),
        );
        let name = |input, id| models.route(input, id).map(|m| m.spec.name.as_str());
        assert_eq!(name(ModelInput::Series, "pump-1"), Some("pumps"));
        assert_eq!(name(ModelInput::Series, "fan-1"), Some("all-series"));
        assert_eq!(name(ModelInput::Bags, "mol-1"), Some("molecules"));
        assert_eq!(name(ModelInput::Bags, "pump-1"), None);
        // The `model` field wins over the routes; a name that is no model's, or a model of
        // the other input, has none.
        let named = |input, id, m| {
            models
                .route_record(input, id, m)
                .map(|m| m.spec.name.as_str())
        };
        assert_eq!(
            named(ModelInput::Series, "pump-1", Some("all-series")),
            Ok("all-series")
        );
        assert_eq!(named(ModelInput::Series, "fan-1", None), Ok("all-series"));
        let unknown = named(ModelInput::Series, "pump-1", Some("nope")).unwrap_err();
        assert!(
            unknown.contains("'nope'") && unknown.contains("'pump-1'"),
            "{unknown}"
        );
        let other = named(ModelInput::Series, "pump-1", Some("molecules")).unwrap_err();
        assert!(
            other.contains("'molecules'") && other.contains("bag records"),
            "{other}"
        );
        assert!(named(ModelInput::Bags, "pump-1", None).is_err());
        // Stored examples: their model if they name one, else the id routes.
        assert!(models.owns_example(
            "all-series",
            ModelInput::Series,
            "pump-1",
            Some("all-series")
        ));
        assert!(!models.owns_example("pumps", ModelInput::Series, "pump-1", Some("all-series")));
        assert!(models.owns_example("pumps", ModelInput::Series, "pump-1", None));
        let why = models.no_model(ModelInput::Bags, "pump-1");
        assert!(
            why.contains("'pump-1'") && why.contains("molecules (mol-*)"),
            "{why}"
        );
    }

    #[test]
    fn the_model_table_alone_is_one_unnamed_series_model_and_its_bag_model() {
        let specs = specs(&Config::default());
        assert_eq!(specs.len(), 2);
        assert_eq!(
            (specs[0].input, &specs[0].route),
            (ModelInput::Series, &Route::All)
        );
        assert_eq!(
            (specs[1].input, &specs[1].route),
            (ModelInput::Bags, &Route::All)
        );
        assert_eq!(specs[0].name, "series");
        assert_eq!(specs[1].name, "bags");
    }
}
