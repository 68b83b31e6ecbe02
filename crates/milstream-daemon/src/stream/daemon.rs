//! The daemon's start-up. In: the config and `run`'s options. Out: a running pipeline until
//! SIGTERM / SIGINT. Owns: the choice of the start-up model (registry, file or embedded),
//! the embedded cluster and demo feed, the HTTP server and the start-up banner.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use tracing::{info, warn};

use super::lifecycle::registry::{self, short_hash};
use super::output::delta::{read_command as delta_read_command, FORMAT_DELTA};
use super::score::window::ScoringModel;
use super::view::{self, ViewHub};
use super::{embedded, pipeline, score::models};
use crate::config::{Config, ModelInput};
use crate::http::Health;
use crate::metrics::Metrics;
use crate::mil::Model;

/// Options of `milstream run` beyond the config file.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Embedded mode: keep the mock cluster but do not start the demo producer.
    pub no_demo_feed: bool,
    /// Logs are JSON lines: the start-up banner becomes one log event instead of text.
    pub json_logs: bool,
}

fn load_model(path: &Path) -> anyhow::Result<(Model, String)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading model {}", path.display()))?;
    let model =
        Model::from_json(&text).with_context(|| format!("loading model {}", path.display()))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((model, format!("{stem}-{}", short_hash(&text))))
}

/// The series model to start with: the registry's `current` when there is one; else the
/// artifact at `model.series_path`, or the embedded GunPoint model trained now, which is then
/// published to the registry (if configured) as its first version.
pub fn resolve_series_model(cfg: &Config) -> anyhow::Result<(Model, String)> {
    let (model, version, _) = resolve_model(
        cfg.registry_dir().as_deref(),
        cfg.model.series_path.as_deref(),
        &cfg.object_store.0,
        cfg.demo.dataset.name(),
        || embedded::train_demo_model(cfg.demo.dataset, cfg.model.kind),
    )?;
    Ok((model, version))
}

/// Every model to start with, as the series model: its registry's `current`, else its
/// artifact, else trained now from the bundled data (GunPoint for series, MUSK1 for bags);
/// checked against what it must score (the window, or bags).
#[allow(clippy::type_complexity)]
fn resolve_models(
    cfg: &Config,
) -> anyhow::Result<Vec<(models::ModelSpec, Arc<ScoringModel>, ModelSource)>> {
    let mut out = Vec::new();
    for spec in models::specs(cfg) {
        let what = format!("model {:?}", spec.name);
        let (model, version, source) = match spec.input {
            ModelInput::Series => resolve_model(
                spec.registry_dir.as_deref(),
                spec.path.as_deref(),
                &cfg.object_store.0,
                cfg.demo.dataset.name(),
                || match &spec.params {
                    // A model's own parameters (`[models.params]`) from its first fit on.
                    Some(p) => Ok(Model::fit(&embedded::demo_train(cfg.demo.dataset), p)?),
                    None => embedded::train_demo_model(cfg.demo.dataset, spec.kind),
                },
            )?,
            ModelInput::Bags => resolve_model(
                spec.registry_dir.as_deref(),
                spec.path.as_deref(),
                &cfg.object_store.0,
                "musk1",
                || match &spec.params {
                    Some(p) => Ok(Model::fit(&embedded::musk1(), p)?),
                    None => embedded::train_embedded_bag_model(spec.kind),
                },
            )?,
        };
        match spec.input {
            // Fail at start, not per window, if the window cannot hold the model's shapelets.
            ModelInput::Series => {
                crate::mil::online::incremental::WindowScorer::new(&model, cfg.window.points)
                    .map_err(|e| anyhow::anyhow!("window.points for {what}: {e}"))?;
            }
            ModelInput::Bags if bag_dim(&model) == 0 => {
                anyhow::bail!("{what} takes bags, but its model scores series")
            }
            ModelInput::Bags => {}
        }
        out.push((
            spec,
            Arc::new(ScoringModel {
                model,
                version,
                generation: 1,
            }),
            source,
        ));
    }
    Ok(out)
}

/// Where a start-up model came from: the precedence of [`resolve_model`], highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelSource {
    /// The registry's `current`: what the last promotion (or first start) left there.
    Registry,
    /// The artifact at `model.series_path` / `bags_path` / a `[[models]]` entry's `path`.
    Path,
    /// Trained at start from the bundled data.
    Embedded,
}

/// A registry's `current`, else the artifact at `path`, else `train_embedded()` (the data
/// named `embedded`); a model not from the registry is published there as its first version.
///
/// The registry wins over `path` on purpose: it holds the versions retraining promoted from
/// that first model, and a restart must come back with the newest of them. So a registry
/// left by an earlier run with other data is served; [`input_mismatches`] makes that loud.
fn resolve_model(
    registry_dir: Option<&Path>,
    path: Option<&Path>,
    options: &std::collections::BTreeMap<String, String>,
    embedded: &str,
    train_embedded: impl FnOnce() -> anyhow::Result<Model>,
) -> anyhow::Result<(Model, String, ModelSource)> {
    let registry = registry_dir
        .map(|dir| registry::Registry::open_with(dir, options))
        .transpose()?;
    // A `current` naming a version that does not load (a hand-edited pointer, a deleted
    // version) must not keep a scorer from starting: running scorers skip such a version,
    // so a restarting one serves the newest version that loads, publishes nothing, and
    // follows `current` once it loads (registry_poll). A store that cannot be read still
    // fails start-up.
    let mut current_unloadable = false;
    if let Some(reg) = &registry {
        if let Some(current) = reg.current()? {
            match reg.load(&current) {
                Ok((m, card)) => {
                    info!(
                        version = card.version,
                        registry = %reg_display(registry_dir),
                        "scoring with the registry's current model"
                    );
                    return Ok((m, card.version, ModelSource::Registry));
                }
                // A store that cannot be read fails the start, as above.
                Err(e) if !e.is_unloadable() => return Err(e.into()),
                Err(e) => {
                    warn!(
                        current,
                        e = format!("{e:#}"),
                        "the registry's current version does not load"
                    );
                    if let Some((m, card)) = reg.newest_loadable()? {
                        warn!(
                            version = card.version,
                            "serving the newest version that loads until `current` does"
                        );
                        return Ok((m, card.version, ModelSource::Registry));
                    }
                    current_unloadable = true;
                }
            }
        }
    }
    let from = if path.is_some() {
        ModelSource::Path
    } else {
        ModelSource::Embedded
    };
    let (model, version, source) = match path {
        Some(p) => {
            let (m, v) = load_model(p)?;
            (m, v, p.display().to_string())
        }
        None => {
            let t = std::time::Instant::now();
            let m = train_embedded()?;
            let v = format!("{embedded}-embedded-{}", registry::model_hash(&m));
            info!(
                seconds = t.elapsed().as_secs_f64(),
                version = v,
                "trained the embedded {embedded} model"
            );
            (m, v, format!("embedded {embedded}"))
        }
    };
    match registry.as_ref().filter(|_| !current_unloadable) {
        Some(reg) => match reg.publish(&model, &registry::ModelCard::describe(&model, &source)) {
            Ok(v) => {
                info!(
                    version = v,
                    "published the first model version to the registry"
                );
                Ok((model, v, from))
            }
            // Another process starting on the same empty registry published first (its
            // `current` won the compare-and-swap): score with that.
            Err(registry::RegistryError::Lost { .. }) => {
                let (m, card) = reg
                    .load_current()?
                    .ok_or_else(|| anyhow::anyhow!("the registry's current vanished"))?;
                info!(
                    version = card.version,
                    "another process published the registry's first version: scoring with it"
                );
                Ok((m, card.version, ModelSource::Registry))
            }
            Err(e) => Err(e.into()),
        },
        None => Ok((model, version, from)),
    }
}

fn reg_display(dir: Option<&Path>) -> String {
    dir.map(|d| d.display().to_string()).unwrap_or_default()
}

/// What a model takes, in a user's words: "1-channel series", "bags of 166 features".
fn takes(model: &Model) -> String {
    match model.input() {
        crate::mil::InputKind::Bag { dim } => format!("bags of {dim} features"),
        other => format!("{}-channel series", other.channels()),
    }
}

/// The demo feed's series ids and what each of its points carries.
fn demo_series(cfg: &Config) -> (String, usize) {
    let channels = match cfg.demo.dataset {
        crate::config::DemoDataset::Gunpoint => 1,
        crate::config::DemoDataset::Basicmotions => 6,
    };
    (format!("{}-sensor-0", cfg.demo.dataset.name()), channels)
}

/// Every start-up model that cannot take what is sent to it, one sentence each: a model
/// from the registry whose input differs from the artifact its `path` names (a stale
/// registry), and, with the demo feed on, the model the feed's series or bags route to when
/// it does not take their channel count or features. Empty when everything fits.
fn input_mismatches(
    cfg: &Config,
    demo_feed: bool,
    start: &[(models::ModelSpec, Arc<ScoringModel>, ModelSource)],
) -> Vec<String> {
    let mut out = Vec::new();
    for (spec, m, source) in start {
        if *source != ModelSource::Registry {
            continue;
        }
        let Some(path) = &spec.path else { continue };
        // Unreadable artifacts are not this check's concern: the registry's model is served.
        if let Ok((artifact, _)) = load_model(path) {
            if artifact.input() != m.model.input() {
                out.push(format!(
                    "model {:?}: the registry's current {} takes {}, but its path {} takes {} \
                     (the registry wins; remove or move {} to serve the artifact)",
                    spec.name,
                    m.version,
                    takes(&m.model),
                    path.display(),
                    takes(&artifact),
                    reg_display(spec.registry_dir.as_deref()),
                ));
            }
        }
    }
    if demo_feed {
        let (series_id, channels) = demo_series(cfg);
        let series = start
            .iter()
            .find(|(s, _, _)| s.input == ModelInput::Series && s.route.matches(&series_id));
        if let Some((spec, m, source)) = series {
            if m.model.input().channels() != channels {
                let sends = format!("{channels}-channel {} series", cfg.demo.dataset.name());
                out.push(demo_mismatch(spec, m, *source, &sends));
            }
        }
        let bags = start
            .iter()
            .find(|(s, _, _)| s.input == ModelInput::Bags && s.route.matches("musk1-0-0"));
        if let (Some((spec, m, source)), false) = (bags, cfg.kafka.bags_topic.is_empty()) {
            if bag_dim(&m.model) != embedded::MUSK1_FEATURES {
                let sends = format!("bags of {} features", embedded::MUSK1_FEATURES);
                out.push(demo_mismatch(spec, m, *source, &sends));
            }
        }
    }
    out
}

/// "model "series" (v1, the registry's current in ...) takes X, but the demo feed sends Y".
fn demo_mismatch(
    spec: &models::ModelSpec,
    m: &ScoringModel,
    source: ModelSource,
    sends: &str,
) -> String {
    format!(
        "model {:?} ({}{}) takes {}, but the demo feed sends {sends}{}",
        spec.name,
        m.version,
        origin(source, spec),
        takes(&m.model),
        stale_hint(source, spec),
    )
}

fn origin(source: ModelSource, spec: &models::ModelSpec) -> String {
    match source {
        ModelSource::Registry => {
            format!(
                ", the registry's current in {}",
                reg_display(spec.registry_dir.as_deref())
            )
        }
        ModelSource::Path => format!(
            ", from {}",
            spec.path
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
        ModelSource::Embedded => ", trained at start".into(),
    }
}

fn stale_hint(source: ModelSource, spec: &models::ModelSpec) -> String {
    match source {
        ModelSource::Registry => format!(
            ": a registry left by a run with other data? Remove {} or set model.registry_dir",
            reg_display(spec.registry_dir.as_deref())
        ),
        _ => String::new(),
    }
}

/// The instance dimension of a bag model (0 for a series model).
fn bag_dim(model: &Model) -> usize {
    match model.input() {
        crate::mil::InputKind::Bag { dim } => dim,
        _ => 0,
    }
}

/// Where the banner says the predictions are (a glob of files, or a note that they are a
/// Delta table) and its lines that read them.
fn predictions_hint(cfg: &Config, out: &str) -> (&'static str, Vec<String>) {
    if cfg.output.format == FORMAT_DELTA {
        let read = format!("  read them:        {}", delta_read_command(out));
        return ("  (a Delta table)", vec![read]);
    }
    let read = vec![
        format!("  read them:        python3 -c \"import pyarrow.dataset as d; print(d.dataset('{out}/predictions', format='parquet', partitioning='hive').to_table().to_pandas())\""),
        format!("                    duckdb -c \"select key, label, scores from read_parquet('{out}/predictions/*/*.parquet')\""),
    ];
    ("/date=*/*.parquet", read)
}

/// Runs the daemon until SIGTERM / SIGINT (or `stop` turns true).
pub async fn run(
    cfg: Config,
    opts: RunOptions,
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    // What the config reads from the environment must be there (an unset `${VAR}` in
    // kafka.instance_id is an error naming it, not an empty string).
    cfg.check_environment().map_err(anyhow::Error::msg)?;
    let mut cfg = cfg;
    if cfg.is_embedded() {
        embedded::for_mock_broker(&mut cfg.kafka);
    }
    let metrics = Metrics::new();
    super::pretouch_metrics(&metrics);
    let health = Arc::new(Health::default());
    // A probe's answer may quote an error that quotes a setting.
    health.set_secrets(cfg.secrets());
    let start = resolve_models(&cfg)?;
    let demo_feed = cfg.is_embedded() && cfg.demo.feed && !opts.no_demo_feed;
    let mismatches = input_mismatches(&cfg, demo_feed, &start);
    for m in &mismatches {
        // One line each, before the banner: the first thing an operator reads.
        warn!("model does not fit its input: {m}");
    }
    if !mismatches.is_empty() {
        health.set_model_mismatch(mismatches.join("; "));
    }
    let start: Vec<_> = start.into_iter().map(|(spec, m, _)| (spec, m)).collect();

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    forward_stop(stop, stop_tx.clone());

    let bootstrap = if cfg.is_embedded() {
        let mut topics = vec![cfg.kafka.points_topic.clone()];
        for t in [
            &cfg.kafka.bags_topic,
            &cfg.kafka.labels_topic,
            &cfg.kafka.models_topic,
            &cfg.output.kafka_topic,
            &cfg.output.dead_letter_topic,
        ] {
            if !t.is_empty() {
                topics.push(t.clone());
            }
        }
        embedded::start_mock_cluster(topics, cfg.kafka.embedded_partitions)?
    } else {
        cfg.kafka.bootstrap_servers.clone()
    };

    let (http_addr, view) = serve_http(&cfg, &metrics, &health, &stop_rx).await?;

    print_banner(&cfg, &opts, &start, &bootstrap, (http_addr, view.is_some()));

    if demo_feed {
        tokio::spawn(embedded::demo_feed(
            bootstrap.clone(),
            embedded::DemoTopics {
                points: cfg.kafka.points_topic.clone(),
                bags: cfg.kafka.bags_topic.clone(),
                labels: cfg.kafka.labels_topic.clone(),
            },
            cfg.demo.dataset,
            cfg.demo.sensors,
            cfg.demo.points_per_second,
            crate::config::parse_duration_ms(&cfg.demo.drift_after)
                .ok()
                .flatten()
                .map(std::time::Duration::from_millis),
            stop_rx.clone(),
        ));
    }
    let feed = view.map(|v| v.feed.clone());
    pipeline::run_pipeline(cfg, bootstrap, start, (metrics, health, feed), stop_rx).await
}

/// The ops endpoints and, with `view.enabled`, the live view beside them, until `stop`:
/// the bound address (None: `http.listen` is empty) and the view.
async fn serve_http(
    cfg: &Config,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<(Option<std::net::SocketAddr>, Option<Arc<ViewHub>>)> {
    if cfg.http.listen.is_empty() {
        return Ok((None, None));
    }
    let view = cfg
        .view
        .enabled
        .then(|| ViewHub::start(&cfg.view, metrics.clone(), health.clone(), stop.clone()));
    let routes = view.clone().map(view::routes::router).unwrap_or_default();
    let mut rx = stop.clone();
    let (addr, _) = crate::http::serve_with(
        &cfg.http.listen,
        metrics.clone(),
        health.clone(),
        routes,
        async move {
            let _ = rx.wait_for(|s| *s).await;
        },
    )
    .await?;
    Ok((Some(addr), view))
}

/// The start-up banner: each model, the topics, where the predictions go and how to read
/// them, the metrics and the live view's addresses (one log event with JSON logs).
fn print_banner(
    cfg: &Config,
    opts: &RunOptions,
    start: &[(models::ModelSpec, Arc<ScoringModel>)],
    bootstrap: &str,
    (http_addr, view): (Option<std::net::SocketAddr>, bool),
) {
    // An object-store URL is shown as given (it holds no credentials: those come from the
    // environment and `[object_store]`, which are never printed).
    let out = if crate::config::is_url(&cfg.output.dir.to_string_lossy()) {
        cfg.output.dir.clone()
    } else {
        std::path::absolute(&cfg.output.dir).unwrap_or_else(|_| cfg.output.dir.clone())
    };
    // One line per model: its name, what it takes, which ids, its version.
    let served: Vec<String> = start
        .iter()
        .map(|(spec, m)| {
            let ids = match &spec.route {
                models::Route::All => "every id".to_string(),
                models::Route::Glob(g) => format!("ids {g}"),
            };
            match spec.input {
                ModelInput::Series => {
                    let channels = match m.model.input().channels() {
                        0 | 1 => String::new(),
                        c => format!(" of {c} channels, `values` per point"),
                    };
                    format!(
                        "{} (series{channels} on {}, {ids}): {}",
                        spec.name, cfg.kafka.points_topic, m.version
                    )
                }
                ModelInput::Bags => format!(
                    "{} (bags of {} features on {}, {ids}): {}",
                    spec.name,
                    bag_dim(&m.model),
                    cfg.kafka.bags_topic,
                    m.version
                ),
            }
        })
        .collect();
    let (glob, read_them) = predictions_hint(cfg, &out.display().to_string());
    // Bag predictions are rows of the same files, told apart by `kind`.
    let bag_predictions = (!cfg.kafka.bags_topic.is_empty()).then(|| {
        format!(
            "{}/predictions{glob}, rows with kind = 'bag'",
            out.display()
        )
    });
    if opts.json_logs {
        info!(
            models = ?served,
            bootstrap,
            embedded = cfg.is_embedded(),
            points_topic = cfg.kafka.points_topic,
            bags_topic = cfg.kafka.bags_topic,
            predictions = format!("{}/predictions", out.display()),
            bag_predictions,
            metrics = ?http_addr.map(|a| format!("http://{a}/metrics")),
            live_view = ?http_addr.filter(|_| view).map(|a| format!("http://{a}/")),
            "milstream started"
        );
    } else {
        eprintln!("milstream: scoring with");
        for line in &served {
            eprintln!("  model {line}");
        }
        eprintln!(
            "  kafka bootstrap:  {bootstrap}{}",
            if cfg.is_embedded() {
                "  (in-process mock cluster; any Kafka client can produce to it)"
            } else {
                ""
            }
        );
        eprintln!(
            "  points topic:     {}  (JSON {{\"series_id\":..,\"ts\":..,\"value\":..}}, or \"values\":[..] per channel; \"model\":\"<name>\" picks a model)",
            cfg.kafka.points_topic
        );
        if !cfg.kafka.bags_topic.is_empty() {
            eprintln!(
                "  bags topic:       {}  (JSON {{\"bag_id\":..,\"instances\":[[..],..]}})",
                cfg.kafka.bags_topic
            );
        }
        eprintln!(
            "  predictions:      {}/predictions{glob}  (series windows and bags alike; model_name says which model)",
            out.display()
        );
        if let Some(b) = &bag_predictions {
            eprintln!("  bag predictions:  {b}");
        }
        for line in &read_them {
            eprintln!("{line}");
        }
        if let Some(a) = http_addr {
            eprintln!("  metrics:          http://{a}/metrics   (/healthz, /readyz)");
            if view {
                eprintln!("  live view:        http://{a}/   (open it in a browser: the streams classified and explained, live)");
            }
        }
    }
}

/// SIGTERM / SIGINT or the caller's stop (`outer`): one shutdown signal for every task.
fn forward_stop(
    mut outer: tokio::sync::watch::Receiver<bool>,
    stop_tx: tokio::sync::watch::Sender<bool>,
) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            _ = async { while !*outer.borrow() { if outer.changed().await.is_err() { std::future::pending::<()>().await; } } } => {}
        }
        info!("stop requested");
        let _ = stop_tx.send(true);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_brings_back_the_same_model_after_a_restart() {
        let dir = std::env::temp_dir().join(format!("milstream-resolve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let model = embedded::train_embedded_model().unwrap();
        let file = dir.join("first.json");
        std::fs::write(&file, model.to_json()).unwrap();
        let mut cfg = Config::default();
        cfg.model.series_path = Some(file.clone());
        cfg.model.registry_dir = Some(dir.join("models"));
        let (m1, v1) = resolve_series_model(&cfg).unwrap();
        assert!(v1.starts_with("v000001-"), "{v1}");
        assert_eq!(m1, model);
        // Restart, with the artifact gone: the registry's current model comes back.
        std::fs::remove_file(&file).unwrap();
        let (m2, v2) = resolve_series_model(&cfg).unwrap();
        assert_eq!((m2, v2), (model, v1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A `current` that names no loadable version (here "named", the folder of the named
    /// models) does not stop a start: the newest version that loads serves, and nothing is
    /// published over the pointer; with no loadable version the artifact serves, unpublished.
    #[test]
    fn a_current_that_does_not_load_serves_the_newest_version_that_does() {
        let dir = std::env::temp_dir().join(format!("milstream-unloadable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let model = embedded::train_embedded_model().unwrap();
        let file = dir.join("first.json");
        std::fs::write(&file, model.to_json()).unwrap();
        let mut cfg = Config::default();
        cfg.model.series_path = Some(file.clone());
        let registry = dir.join("models");
        cfg.model.registry_dir = Some(registry.clone());
        let (_, v1) = resolve_series_model(&cfg).unwrap();
        std::fs::write(registry.join("current"), "named").unwrap();
        let (m, v) = resolve_series_model(&cfg).unwrap();
        assert_eq!((m, v), (model.clone(), v1.clone()));
        assert_eq!(
            std::fs::read_to_string(registry.join("current")).unwrap(),
            "named"
        );
        // No version loads: the artifact serves, the pointer stays as the operator left it.
        std::fs::remove_dir_all(registry.join(&v1)).unwrap();
        let (m, v) = resolve_series_model(&cfg).unwrap();
        assert_eq!(m, model);
        assert!(!v.starts_with('v'), "{v}");
        assert_eq!(
            std::fs::read_to_string(registry.join("current")).unwrap(),
            "named"
        );
        assert!(registry::Registry::open(&registry)
            .unwrap()
            .versions()
            .unwrap()
            .is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
