//! One TOML file configures the daemon. Every key has a default; an unknown key or a bad
//! value is an error naming the key path. `deploy/milstream.example.toml` is the annotated
//! example; the doc comment of each field here is its documentation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod drift;
mod env;
mod input;
mod named;
mod roles;
mod schema_registry;
mod training;
mod view;
pub use drift::{DriftConfig, ErrorDetector, OnDrift};
pub use env::{expand_env, is_secret_key, Secrets};
pub use input::{InputConfig, InputFormat};
pub use named::{ModelInput, NamedModelConfig, NamedTrainingConfig};
pub use schema_registry::SchemaRegistryConfig;
pub use training::TrainingConfig;
pub use view::ViewConfig;

/// The whole configuration.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where records come from: the cluster, the consumer group, the topics and librdkafka's
    /// own settings.
    pub kafka: KafkaConfig,
    /// How each input topic's messages are encoded: JSON (the default) or Avro.
    pub input: InputConfig,
    /// The schema registry of Avro input.
    pub schema_registry: SchemaRegistryConfig,
    /// How each series' points become windows (bags of subsequences) to score.
    pub window: WindowConfig,
    /// Input limits: what goes past one is a dead letter with its reason, never a larger
    /// allocation.
    pub limits: LimitsConfig,
    /// The process's role and how the work is spread over scoring threads.
    pub pipeline: PipelineConfig,
    /// The series model and the bag model that score when there are no `[[models]]`, and the
    /// model registry.
    pub model: ModelConfig,
    /// Named models (`[[models]]`), each scoring the ids its route matches. Empty: the
    /// `[model]` table serves every series (and its bag model every bag) as before.
    pub models: Vec<NamedModelConfig>,
    /// Retraining from the labels on the stream, and the label-join history.
    pub training: TrainingConfig,
    /// Live accuracy on the stream's labels and drift detection (`[drift]`).
    pub drift: DriftConfig,
    /// Where predictions, dead letters, evaluations and drift events go, and when files roll.
    pub output: OutputConfig,
    /// Offset commits.
    pub commit: CommitConfig,
    /// The ops endpoints: `/metrics`, `/healthz`, `/readyz`.
    pub http: HttpConfig,
    /// The live view: a read-only page at `/` on `http.listen`, updated by server-sent events.
    pub view: ViewConfig,
    /// Stopping: on SIGTERM and on a partition revoke.
    pub shutdown: ShutdownConfig,
    /// The demo feed of the embedded cluster (only with `kafka.bootstrap_servers = "embedded"`).
    pub demo: DemoConfig,
    /// Object-store settings passed through to the `object_store` crate's builder of the
    /// URL's scheme (`aws_endpoint`, `aws_region`, `aws_allow_http`, `google_*`, `azure_*`,
    /// ...; on top of the same `AWS_*` / `GOOGLE_*` / `AZURE_*` environment variables).
    /// Used when `output.dir`, `training.dir` or `model.registry_dir` is a URL. Never logged.
    pub object_store: StoreOptions,
}

/// The `[object_store]` table: its values may be secrets, so Debug shows the keys only.
#[derive(Clone, Deserialize, Default)]
#[serde(transparent)]
pub struct StoreOptions(pub BTreeMap<String, String>);

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

/// Where records come from. Its `Debug` redacts the values of secret `properties` (see
/// [`is_secret_key`]).
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaConfig {
    /// `embedded` starts librdkafka's in-process mock cluster (no external service);
    /// anything else is a `host:port,...` bootstrap list of a real cluster.
    pub bootstrap_servers: String,
    /// Consumer group; N daemons in one group split the partitions.
    pub group_id: String,
    /// Topic of point records (`{"series_id","ts","value"}`).
    pub points_topic: String,
    /// Topic of bag records (`{"bag_id","instances",...}`); empty = not consumed.
    pub bags_topic: String,
    /// Topic of label records; empty = not consumed.
    pub labels_topic: String,
    /// Compacted topic of promoted models, keyed by `model.name`: trainers publish to it,
    /// scorers follow it. Empty = off.
    pub models_topic: String,
    /// Partitions of each topic the embedded cluster creates.
    pub embedded_partitions: i32,
    /// Static group membership (`group.instance.id`): a member that restarts with the same
    /// id takes its partitions back at once instead of after `session.timeout.ms`. Unique
    /// per live process in the group; `${VAR}` is read from the environment (in Kubernetes,
    /// the pod name of a StatefulSet; as in every string of the file): an unset `${VAR}` is
    /// an error at start-up (else every pod would get the same id), `${VAR:-default}` gives
    /// `default` when VAR is unset or empty. Empty = dynamic membership. `group.instance.id` in `properties` works too and
    /// wins.
    pub instance_id: String,
    /// librdkafka settings passed through untouched (security.protocol, sasl.*, ssl.*,
    /// fetch sizes, session.timeout.ms, ...). `enable.auto.commit` is always false. Give a
    /// secret from the environment, e.g. `"sasl.password" = "${KAFKA_SASL_PASSWORD}"` (every
    /// string of the file expands `${VAR}`); secret values never show in logs or probes.
    #[serde(serialize_with = "env::serialize_properties")]
    pub properties: BTreeMap<String, String>,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            bootstrap_servers: "embedded".into(),
            group_id: "milstream".into(),
            points_topic: "milstream.points".into(),
            bags_topic: "milstream.bags".into(),
            labels_topic: "milstream.labels".into(),
            models_topic: "milstream.models".into(),
            embedded_partitions: 4,
            instance_id: String::new(),
            properties: BTreeMap::new(),
        }
    }
}

/// Per-series event-time windows.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WindowConfig {
    /// A window is the last `points` points of a series; its bag is all subsequences of the
    /// model's shapelet length(s). With `duration_ms`, the most points a window keeps.
    pub points: usize,
    /// When > 0, a window is instead the series' points within `duration_ms` of the window's
    /// end (at most `points` of them); a window with fewer points than the longest shapelet
    /// is not emitted. 0 = count windows.
    pub duration_ms: i64,
    /// A window is emitted each time a series' event time crosses a multiple of `hop_ms`
    /// (the window ending at the last point before the boundary). For points every T ms,
    /// hop_ms = H x T emits every H points. Aligning on event time makes a replay re-emit
    /// exactly the same windows.
    pub hop_ms: i64,
    /// Points up to this much older than the newest point of their series are put in
    /// order; older ones go to the dead-letter sink as `late`.
    pub lateness_ms: i64,
    /// A gap longer than this in a series' event time restarts its window; series idle
    /// that long are evicted.
    pub idle_timeout_ms: i64,
    /// Most live series per partition; beyond it the least recently seen is evicted.
    pub max_series_per_partition: usize,
    /// Top contributing hypotheses kept per prediction (`top`), and top findings
    /// (`findings`: hypotheses grouped by the place their best match covers).
    pub top_contributions: usize,
}

impl Default for WindowConfig {
    fn default() -> Self {
        Self {
            points: 150,
            duration_ms: 0,
            hop_ms: 1_500,
            lateness_ms: 0,
            idle_timeout_ms: 600_000,
            max_series_per_partition: 100_000,
            top_contributions: 3,
        }
    }
}

/// What a process does when the work is split across processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Score, join labels, train and publish: one process does everything.
    #[default]
    All,
    /// Score only; follow the models topic for new versions.
    Scorer,
    /// Join labels, keep the training store, train and publish to the models topic; writes
    /// no predictions. Consumes in its own group, `<group_id>.trainer`, so it sees every
    /// partition while the scorers of `group_id` split them.
    Trainer,
}

/// How the work is spread over threads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineConfig {
    /// all | scorer | trainer.
    pub role: Role,
    /// Scoring workers; each owns a share of the assigned partitions (their windows and open
    /// files), so a partition is still processed in offset order. 0 = one per CPU core.
    pub workers: usize,
    /// Messages queued per worker before the consumer waits (and, if the worker stays
    /// behind, pauses its partitions).
    pub queue_messages: usize,
    /// Payload bytes queued per worker at most, whichever of the two bounds comes first.
    pub queue_bytes: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            role: Role::All,
            workers: 0,
            // Deep enough for a whole fetch of a partition (librdkafka hands them over one
            // partition at a time): with 1,024, the consumer waited on one worker's full
            // queue while the other worker's drained, and both cores idled a sixth of the
            // time (one point per message, `bench-stream`: ~370k points/s against ~520k).
            queue_messages: 16_384,
            queue_bytes: 16 << 20,
        }
    }
}

impl PipelineConfig {
    /// The number of workers to start (`workers`, or one per core when 0).
    pub fn worker_count(&self) -> usize {
        if self.workers > 0 {
            self.workers
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

/// Input limits; what breaks them goes to the dead-letter sink.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Largest message payload decoded, in bytes (`oversized` beyond).
    pub max_message_bytes: usize,
    /// Most instances in one bag record (`too_large` beyond).
    pub max_bag_instances: usize,
    /// Longest `series_id`, `bag_id`, `model` and label class, in bytes (`too_large`
    /// beyond): every kept id is copied into windows, the label-join history and each row.
    pub max_id_bytes: usize,
    /// How far a point's `ts` may be ahead of its message's arrival (the Kafka timestamp,
    /// capped at the wall clock), in ms (`future` beyond). Default 1 h: room for clock drift
    /// and batching; an accepted point this far ahead holds its series (later, correct
    /// points are `late`) and the partition's replay point for up to this long plus
    /// `window.idle_timeout_ms`, so it is kept short.
    pub max_future_skew_ms: i64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_message_bytes: 1 << 20,
            max_bag_instances: 10_000,
            max_id_bytes: 256,
            max_future_skew_ms: 3_600_000,
        }
    }
}

/// The models that score.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Model artifact (JSON, from `milstream train`) for series windows. Unset: train the
    /// embedded GunPoint model at start.
    pub series_path: Option<PathBuf>,
    /// Model artifact for bag records. Unset: train the embedded MUSK1 bag model at start
    /// (bags of 166 features), so bag records are scored with no configuration.
    pub bags_path: Option<PathBuf>,
    /// The series model's name: its key on the models topic, the `model` label of its
    /// metrics and the `model_name` of its prediction rows.
    pub name: String,
    /// The bag model's name, as `name` is the series model's. Its registry is
    /// `<registry>/named/<bags_name>/`.
    pub bags_name: String,
    /// The kind trained when there is no model yet (the embedded GunPoint model, and the
    /// trainer's first candidate): lpboost, miordm, boxsvm, misvm or mi-svm. Retraining
    /// keeps the serving model's kind and parameters.
    pub kind: crate::mil::model::ModelKind,
    /// Model registry folder (`<version>/model.json`, `card.json`, `current`). When set, the
    /// daemon scores with `current` if there is one; otherwise it takes the model from
    /// `series_path` (or trains the embedded one), publishes it as the first version and
    /// scores with that, so a restart comes back with the same model. Unset: `models/` next
    /// to `training.dir` while retraining is on (the default: `milstream-data/models`), else
    /// no registry. Precedence at start: the registry's `current`, then `series_path`, then
    /// the embedded model; a `current` that does not take what the demo feed sends, or that
    /// differs in input from `series_path`'s artifact, is logged and fails `/readyz`.
    /// A path or an object-store URL (see `[object_store]`), shared by scorers and trainers.
    pub registry_dir: Option<PathBuf>,
    /// A process that does not train reads the registry's `current` this often and swaps to
    /// a new version (besides following the models topic). 0 = off.
    pub registry_poll_ms: u64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            series_path: None,
            bags_path: None,
            name: "series".into(),
            bags_name: "bags".into(),
            kind: crate::mil::model::ModelKind::Lpboost,
            registry_dir: None,
            registry_poll_ms: 10_000,
        }
    }
}

impl Config {
    /// The consumer group this process joins: `kafka.group_id`, or `<group_id>.trainer` for
    /// the trainer role, which reads every partition beside the scorers.
    pub fn group_id(&self) -> String {
        match self.pipeline.role {
            Role::Trainer => format!("{}.trainer", self.kafka.group_id),
            _ => self.kafka.group_id.clone(),
        }
    }

    /// `kafka.instance_id` with every `${VAR}` (or `${VAR:-default}`) replaced from the
    /// environment; None when that leaves it empty, or when a variable is unset (which
    /// [`Config::check_environment`] reports at start-up).
    pub fn instance_id(&self) -> Option<String> {
        self.expanded_instance_id().ok().flatten()
    }

    /// [`Config::instance_id`], or an error naming the unset variable and the key.
    pub fn expanded_instance_id(&self) -> Result<Option<String>, String> {
        let out =
            expand_env(&self.kafka.instance_id).map_err(|e| format!("kafka.instance_id: {e}"))?;
        let out = out.trim().to_string();
        Ok((!out.is_empty()).then_some(out))
    }

    /// The values to keep out of logs and probes: secret `kafka.properties` (see
    /// [`is_secret_key`]), every `[object_store]` option and `schema_registry.password`.
    pub fn secrets(&self) -> Secrets {
        let kafka = self
            .kafka
            .properties
            .iter()
            .filter(|(k, _)| is_secret_key(k));
        Secrets::new(
            kafka
                .map(|(_, v)| v.clone())
                .chain(self.object_store.0.values().cloned())
                .chain([self.schema_registry.password.clone()]),
        )
    }

    /// What the config reads from the environment, checked where it runs (the daemon's
    /// start-up): an unset `${VAR}` is an error naming it, rather than "" (which gave every
    /// pod of `instance_id = "scorer-${POD_NAME}"` the same id). Not part of
    /// [`Config::parse`], so a config file parses the same anywhere (a ConfigMap checked
    /// outside its pod).
    pub fn check_environment(&self) -> Result<(), String> {
        self.expanded_instance_id().map(|_| ())
    }

    /// The model registry in use: `model.registry_dir`, or `models/` next to the training
    /// store when retraining is on (so promoted models survive a restart); None otherwise.
    /// A named model's registry: its own `registry_dir`, or a folder inside the registry.
    pub fn named_registry_dir(&self, m: &NamedModelConfig) -> Option<PathBuf> {
        m.registry_dir
            .clone()
            .or_else(|| self.registry_dir().map(|d| d.join("named").join(&m.name)))
    }

    /// The bag model's registry: a folder of its own inside the series model's.
    pub fn bag_registry_dir(&self) -> Option<PathBuf> {
        self.registry_dir()
            .map(|d| d.join("named").join(&self.model.bags_name))
    }

    pub fn registry_dir(&self) -> Option<PathBuf> {
        self.model.registry_dir.clone().or_else(|| {
            self.training.enabled.then(|| {
                self.training
                    .dir
                    .parent()
                    .map_or_else(|| PathBuf::from("models"), |p| p.join("models"))
            })
        })
    }
}

/// True when an output or store location is an object-store URL (`s3://`, `gs://`,
/// `az://`, ...) rather than a local path (`file://` is a path).
pub fn is_url(location: &str) -> bool {
    location.contains("://") && !location.starts_with("file://")
}

/// Parses a duration ("250ms", "30s", "15m", "1h", "7d", or humantime's other forms such
/// as "1h 30m") into milliseconds; "" is None. One that does not fit in u64 milliseconds
/// is an error, not a wrap.
pub fn parse_duration_ms(s: &str) -> Result<Option<u64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let d = humantime::parse_duration(s).map_err(|e| {
        format!(
            "{s:?} is not a duration such as \"250ms\", \"30s\", \"15m\", \"1h\" or \"7d\": {e}"
        )
    })?;
    u64::try_from(d.as_millis())
        .map(Some)
        .map_err(|_| format!("{s:?} is too long: at most {} ms", u64::MAX))
}

/// Where predictions go.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// Root folder: `predictions/date=YYYY-MM-DD/`, `dead_letters/date=.../` (and `arrow/`) under it.
    /// A path, or an object-store URL (`s3://bucket/prefix`, `gs://...`, `az://...`,
    /// `file:///...`); see `[object_store]`.
    pub dir: PathBuf,
    /// Hive partitions of the output files by the event time of their first message (its
    /// first point's `ts`; the Kafka timestamp for bags and labels), UTC: `date`
    /// (`date=YYYY-MM-DD/`) or `hour` (`date=YYYY-MM-DD/hour=HH/`).
    pub partition_by: String,
    /// `parquet`: Parquet files in Hive folders (the default). `delta`: `predictions/`,
    /// `dead_letters/`, `evaluations/` and `drift_events/` are each a Delta Lake table;
    /// every flush of a partition is one table commit carrying the partition's next offset
    /// as a `txn` (app id `milstream/<group>/<topic>/<partition>`), so a replay never
    /// appends a row twice (docs/DELIVERY.md). On S3 the commit needs conditional puts
    /// (`aws_conditional_put = "etag"`, the default of `[object_store]`).
    pub format: String,
    /// Roll a partition's file after this many rows ...
    pub roll_rows: usize,
    /// ... or at about this many bytes of Parquet: the rows' in-memory estimate scaled by
    /// what the files written so far measured (per source topic; `sink::roll`) ...
    pub roll_bytes: usize,
    /// ... or when its oldest row is this old (wall clock).
    pub roll_age_ms: u64,
    /// Most bytes (estimated) held by the open files of all partitions together; beyond it
    /// the largest is rolled early. Bounds memory when many partitions are assigned.
    pub max_open_bytes: usize,
    /// Also write each file's rows as an Arrow IPC stream: `arrow/date=.../<same name>.arrows`.
    pub arrow_ipc: bool,
    /// Also produce predictions (JSON) to this Kafka topic; empty = off.
    pub kafka_topic: String,
    /// Also produce dead letters (JSON) to this Kafka topic; empty = off.
    pub dead_letter_topic: String,
    /// Sealed files waiting for the writer before the consumer pauses its partitions.
    pub max_pending_files: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("milstream-out"),
            partition_by: "date".into(),
            format: "parquet".into(),
            roll_rows: 50_000,
            roll_bytes: 64 << 20,
            roll_age_ms: 5_000,
            max_open_bytes: 256 << 20,
            arrow_ipc: false,
            kafka_topic: String::new(),
            dead_letter_topic: String::new(),
            max_pending_files: 8,
        }
    }
}

/// Offset commits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommitConfig {
    /// How often durable offsets are committed.
    pub interval_ms: u64,
    /// Put the replay point into the commit metadata. `false` commits bare offsets, as a
    /// broker that drops commit metadata leaves them (tests use it to take that path); the
    /// replay point then comes from the newest durable output file.
    pub metadata: bool,
}

impl Default for CommitConfig {
    fn default() -> Self {
        Self {
            interval_ms: 1_000,
            metadata: true,
        }
    }
}

/// The ops endpoints.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// `/metrics`, `/healthz`, `/readyz` and the live view (`/`, see `[view]`) listen here;
    /// empty = off.
    pub listen: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9464".into(),
        }
    }
}

/// Stopping.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShutdownConfig {
    /// On SIGTERM / SIGINT: finish files, commit and exit within this time. A sink still
    /// failing then is given up on: what it did not write is not committed (the next start
    /// replays it), and the log names those offsets.
    pub grace_ms: u64,
    /// On partition revoke: time to finish and commit the partition's files. Keep it below
    /// the group's session timeout.
    pub revoke_timeout_ms: u64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        Self {
            grace_ms: 10_000,
            revoke_timeout_ms: 3_000,
        }
    }
}

/// The embedded demo feed (only with `bootstrap_servers = "embedded"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DemoConfig {
    /// Replay the demo dataset's series as live sensors.
    pub feed: bool,
    /// What the feed replays and the embedded series model is trained on.
    pub dataset: DemoDataset,
    /// Simulated sensors.
    pub sensors: usize,
    /// Points per second over all sensors.
    pub points_per_second: u64,
    /// The world changes this long after start ("2m"; "" = never): each series' label
    /// becomes the next class, so accuracy falls, a drift is detected and a retrain recovers.
    pub drift_after: String,
}

/// The bundled series data of the embedded default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DemoDataset {
    /// GunPoint (UCR): one channel, 150 points per series.
    #[default]
    Gunpoint,
    /// BasicMotions (UEA): six channels (3-axis accelerometer and gyroscope), 100 steps.
    Basicmotions,
}

impl DemoDataset {
    pub fn name(self) -> &'static str {
        match self {
            DemoDataset::Gunpoint => "gunpoint",
            DemoDataset::Basicmotions => "basicmotions",
        }
    }
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            feed: true,
            dataset: DemoDataset::default(),
            sensors: 8,
            points_per_second: 2_000,
            drift_after: String::new(),
        }
    }
}

/// A configuration that cannot be used; the message names the key path.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: key `{path}`: {message}")]
    Key {
        file: String,
        path: String,
        message: String,
    },
    #[error("{file}: {message}")]
    Syntax { file: String, message: String },
}

impl Config {
    /// Reads the daemon's configuration file, with `${VAR}` and `${VAR:-default}` expanded
    /// from the environment in every string (see [`Config::parse_with_env`]).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            file: file.clone(),
            source,
        })?;
        Self::parse_with_env(&file, &text)
    }

    /// [`Config::parse`] after expanding `${VAR}` and `${VAR:-default}` from the environment
    /// in every string value of the file (keys stay as written): where it runs, so secrets
    /// come from the environment. An unset variable without a default is an error naming the
    /// key and the variable.
    pub fn parse_with_env(file: &str, text: &str) -> Result<Self, ConfigError> {
        let mut tree: toml::Value = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            file: file.into(),
            message: e.to_string(),
        })?;
        let changed =
            env::expand_tree(&mut tree, "").map_err(|(path, message)| ConfigError::Key {
                file: file.into(),
                path,
                message,
            })?;
        if !changed {
            // Parsed from the text itself, so errors point at its lines.
            return Self::parse(file, text);
        }
        // Written back and parsed as any file: every key check and error path applies to
        // the expanded values. (An expanded value is a string; written back it stays one.)
        let expanded = toml::to_string(&tree).map_err(|e| ConfigError::Syntax {
            file: file.into(),
            message: e.to_string(),
        })?;
        Self::parse(file, &expanded)
    }

    /// Parses TOML text as written: `${VAR}` stays as is (so a ConfigMap checked outside its
    /// pod parses the same; [`Config::load`] expands them); `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError::Syntax {
            file: file.into(),
            message: e.to_string(),
        })?;
        let cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().message().to_string();
            ConfigError::Key {
                file: file.into(),
                path,
                message,
            }
        })?;
        cfg.validate().map_err(|(path, message)| ConfigError::Key {
            file: file.into(),
            path: path.into(),
            message,
        })?;
        Ok(cfg)
    }

    /// The checks of the sections that have their own.
    fn validate_sections(&self) -> Result<(), (&'static str, String)> {
        self.drift.validate().and(self.view.validate())?;
        self.schema_registry.validate(self.input.uses_registry())
    }

    /// Cross-field checks, run at start-up.
    // Long on purpose: a flat list of independent checks, one per key, read top to bottom.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        self.validate_sections()?;
        let w = &self.window;
        if w.points < 2 {
            return Err(("window.points", format!("must be >= 2, got {}", w.points)));
        }
        if w.duration_ms < 0 {
            return Err((
                "window.duration_ms",
                format!("must be >= 0 (0 = count windows), got {}", w.duration_ms),
            ));
        }
        if w.hop_ms <= 0 {
            return Err(("window.hop_ms", format!("must be > 0, got {}", w.hop_ms)));
        }
        if w.lateness_ms < 0 {
            return Err((
                "window.lateness_ms",
                format!("must be >= 0, got {}", w.lateness_ms),
            ));
        }
        if w.idle_timeout_ms <= 0 {
            return Err((
                "window.idle_timeout_ms",
                format!("must be > 0, got {}", w.idle_timeout_ms),
            ));
        }
        if w.max_series_per_partition == 0 {
            return Err(("window.max_series_per_partition", "must be >= 1".into()));
        }
        if self.output.roll_rows == 0 || self.output.roll_bytes == 0 {
            return Err((
                "output.roll_rows",
                "roll_rows and roll_bytes must be >= 1".into(),
            ));
        }
        let t = &self.training;
        if let Err(e) = parse_duration_ms(&t.every) {
            return Err(("training.every", e));
        }
        if let Err(e) = parse_duration_ms(&t.max_age) {
            return Err(("training.max_age", e));
        }
        if let Err(e) = parse_duration_ms(&t.search_budget) {
            return Err(("training.search_budget", e));
        }
        if !(0.0..1.0).contains(&t.holdout) {
            return Err((
                "training.holdout",
                format!("must be in [0, 1), got {}", t.holdout),
            ));
        }
        if t.tolerance.is_nan() || t.tolerance < 0.0 {
            return Err((
                "training.tolerance",
                format!("must be >= 0, got {}", t.tolerance),
            ));
        }
        t.validate_history()?;
        if t.min_examples < 4 {
            return Err(("training.min_examples", "must be >= 4".into()));
        }
        if self.pipeline.queue_messages == 0 {
            return Err(("pipeline.queue_messages", "must be >= 1".into()));
        }
        if self.pipeline.queue_bytes < 1 << 10 {
            return Err(("pipeline.queue_bytes", "must be >= 1024".into()));
        }
        if self.output.max_open_bytes == 0 {
            return Err(("output.max_open_bytes", "must be >= 1".into()));
        }
        one_of(
            "output.partition_by",
            &self.output.partition_by,
            &["date", "hour"],
        )?;
        one_of("output.format", &self.output.format, &["parquet", "delta"])?;
        if self.output.max_pending_files == 0 {
            return Err(("output.max_pending_files", "must be >= 1".into()));
        }
        if self.kafka.points_topic.is_empty() {
            return Err(("kafka.points_topic", "must not be empty".into()));
        }
        if self.kafka.group_id.is_empty() {
            return Err(("kafka.group_id", "must not be empty".into()));
        }
        if self.model.name.is_empty() || self.model.bags_name.is_empty() {
            return Err(("model.name", "model names must not be empty".into()));
        }
        let mut names = std::collections::BTreeSet::new();
        for m in &self.models {
            if m.name.is_empty() || !names.insert(m.name.as_str()) {
                return Err((
                    "models.name",
                    format!(
                        "every [[models]] needs a name of its own; {:?} is not",
                        m.name
                    ),
                ));
            }
            if m.ids.is_empty() {
                return Err(("models.ids", format!("model {:?} routes no ids", m.name)));
            }
            if let Err(e) = m.fit_params(self.model.kind) {
                return Err(("models.params", format!("model {:?}: {e}", m.name)));
            }
            if m.training.holdout.is_some_and(|h| !(0.0..1.0).contains(&h))
                || m.training.tolerance.is_some_and(|t| t.is_nan() || t < 0.0)
                || m.training.min_examples.is_some_and(|n| n < 4)
            {
                return Err((
                    "models.training",
                    format!(
                        "model {:?}: holdout in [0, 1), tolerance >= 0, min_examples >= 4",
                        m.name
                    ),
                ));
            }
        }
        if self.model.name == self.model.bags_name {
            return Err((
                "model.bags_name",
                format!("must differ from model.name ({:?})", self.model.name),
            ));
        }
        if self.kafka.embedded_partitions < 1 {
            return Err(("kafka.embedded_partitions", "must be >= 1".into()));
        }
        if let Some(v) = self.kafka.properties.get("enable.auto.commit") {
            if v != "false" {
                return Err((
                    "kafka.properties.enable.auto.commit",
                    "milstream commits itself; it must be false or unset".into(),
                ));
            }
        }
        self.check_rebalance_protocol()?;
        self.check_output_trees()?;
        if self.limits.max_bag_instances == 0 || self.limits.max_message_bytes == 0 {
            return Err((
                "limits",
                "max_message_bytes and max_bag_instances must be >= 1".into(),
            ));
        }
        if self.limits.max_id_bytes == 0 || self.limits.max_future_skew_ms < 0 {
            return Err((
                "limits",
                "max_id_bytes must be >= 1 and max_future_skew_ms >= 0".into(),
            ));
        }
        Ok(())
    }

    pub fn is_embedded(&self) -> bool {
        self.kafka.bootstrap_servers == "embedded"
    }
}

/// `value` of the key `path` is one of `allowed`, or the error naming them.
fn one_of(path: &'static str, value: &str, allowed: &[&str]) -> Result<(), (&'static str, String)> {
    if allowed.contains(&value) {
        return Ok(());
    }
    let names: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
    Err((path, format!("{value:?} is not {}", names.join(" or "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Incremental rebalancing would revoke a part of the assignment where the callbacks
    /// drop all of it: refused when the config loads, naming the key.
    #[test]
    fn incremental_rebalancing_is_refused_by_name() {
        for (key, value) in [
            ("partition.assignment.strategy", "cooperative-sticky"),
            ("group.protocol", "consumer"),
        ] {
            let text = format!("[kafka.properties]\n\"{key}\" = \"{value}\"\n");
            let e = Config::parse("x.toml", &text).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("not supported"), "{e}");
        }
        let eager =
            "[kafka.properties]\n\"partition.assignment.strategy\" = \"range,roundrobin\"\n";
        assert!(Config::parse("x.toml", eager).is_ok());
    }

    /// A training store inside the output folder (or holding it) would be swept over files
    /// other roles wrote: refused, naming both keys; a scorer does not train, so it may.
    #[test]
    fn a_training_store_overlapping_the_output_is_refused() {
        for (out, train) in [
            ("data", "data/training"),
            ("data/out", "data"),
            ("s3://b/x", "s3://b/x/"),
        ] {
            let text = format!("[output]\ndir = \"{out}\"\n[training]\ndir = \"{train}\"\n");
            let e = Config::parse("x.toml", &text).unwrap_err().to_string();
            assert!(
                e.contains("training.dir") && e.contains("output.dir"),
                "{e}"
            );
        }
        let apart = "[output]\ndir = \"data/out\"\n[training]\ndir = \"data/outer\"\n";
        assert!(Config::parse("x.toml", apart).is_ok());
        let scorer =
            "[pipeline]\nrole = \"scorer\"\n[output]\ndir = \"d\"\n[training]\ndir = \"d/t\"\n";
        assert!(Config::parse("x.toml", scorer).is_ok());
    }

    #[test]
    fn empty_file_is_all_defaults() {
        let c = Config::parse("x.toml", "").unwrap();
        assert!(c.is_embedded());
        assert_eq!(c.window.points, 150);
        assert_eq!(c.http.listen, "127.0.0.1:9464");
    }

    #[test]
    fn instance_id_reads_the_environment() {
        let parse = |v: &str| {
            Config::parse("x.toml", &format!("[kafka]\ninstance_id = \"{v}\"\n"))
                .unwrap()
                .instance_id()
        };
        assert_eq!(parse(""), None);
        assert_eq!(parse("scorer-0"), Some("scorer-0".into()));
        let path = std::env::var("PATH").unwrap();
        assert_eq!(parse("a-${PATH}-b"), Some(format!("a-{path}-b")));
        assert_eq!(
            parse("scorer-${MILSTREAM_SURELY_UNSET_VAR:-local}"),
            Some("scorer-local".into())
        );
        assert_eq!(
            parse("${PATH:-x}-${MILSTREAM_SURELY_UNSET_VAR:-}"),
            Some(format!("{path}-"))
        );
    }

    /// Secrets come from the environment in every string of the file, not only in
    /// `kafka.instance_id`, and never show in `Debug` (before, `sasl.password` had to sit in
    /// the file and `{:?}` of the config printed it).
    #[test]
    fn every_string_expands_from_the_environment_and_secrets_stay_hidden() {
        std::env::set_var("MILSTREAM_TEST_SASL_PASSWORD", "s3cr3t-from-env");
        std::env::set_var("MILSTREAM_TEST_GROUP", "scorers");
        let dir = std::env::temp_dir().join(format!("milstream-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scorer.toml");
        let text = r#"
[kafka]
group_id = "milstream-${MILSTREAM_TEST_GROUP}"
[kafka.properties]
"sasl.username" = "${MILSTREAM_SURELY_UNSET_USER:-milstream}"
"sasl.password" = "${MILSTREAM_TEST_SASL_PASSWORD}"
[object_store]
aws_secret_access_key = "${MILSTREAM_TEST_SASL_PASSWORD}"
[output]
dir = "${MILSTREAM_SURELY_UNSET_DIR:-/var/lib/milstream/out}"
"#;
        std::fs::write(&path, text).unwrap();
        let cfg = Config::load(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let props = &cfg.kafka.properties;
        assert_eq!(props["sasl.password"], "s3cr3t-from-env");
        assert_eq!(props["sasl.username"], "milstream");
        assert_eq!(cfg.kafka.group_id, "milstream-scorers");
        assert_eq!(cfg.output.dir, PathBuf::from("/var/lib/milstream/out"));
        assert_eq!(
            cfg.object_store.0["aws_secret_access_key"],
            "s3cr3t-from-env"
        );
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(
            shown.contains("\"sasl.password\": \"<redacted>\""),
            "{shown}"
        );
        assert!(
            shown.contains("\"sasl.username\": \"milstream\""),
            "{shown}"
        );
        let said = cfg
            .secrets()
            .mask("SASL authentication with s3cr3t-from-env failed");
        assert_eq!(said, "SASL authentication with <redacted> failed");
        // `parse` leaves the file as written (a ConfigMap checked outside its pod).
        let literal = Config::parse("scorer.toml", text).unwrap();
        assert_eq!(
            literal.kafka.properties["sasl.password"],
            "${MILSTREAM_TEST_SASL_PASSWORD}"
        );
    }

    /// An unset variable without a default, in any string: loading fails naming the key and
    /// the variable.
    #[test]
    fn an_unset_variable_anywhere_is_an_error_naming_key_and_variable() {
        let text = "[kafka.properties]\n\"sasl.password\" = \"${MILSTREAM_SURELY_UNSET_PW}\"\n";
        let e = Config::parse_with_env("scorer.toml", text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kafka.properties.\"sasl.password\"")
                && e.contains("MILSTREAM_SURELY_UNSET_PW"),
            "{e}"
        );
        let text = "[[models]]\nname = \"a\"\nids = [\"x\", \"${MILSTREAM_SURELY_UNSET_ID}\"]\n";
        let e = Config::parse_with_env("x.toml", text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("models[0].ids[1]") && e.contains("MILSTREAM_SURELY_UNSET_ID"),
            "{e}"
        );
    }

    /// An unset variable used to expand to "", so `scorer-${POD_NAME}` gave every pod the
    /// same id: now the start-up check fails, naming the variable and the key (the file
    /// itself still parses: it may be checked outside the pod that sets the variable).
    #[test]
    fn an_unset_variable_in_instance_id_is_an_error_naming_it() {
        let cfg = Config::parse(
            "x.toml",
            "[kafka]\ninstance_id = \"scorer-${MILSTREAM_SURELY_UNSET_VAR}\"\n",
        )
        .unwrap();
        let e = cfg.check_environment().unwrap_err();
        assert!(
            e.contains("kafka.instance_id") && e.contains("MILSTREAM_SURELY_UNSET_VAR"),
            "{e}"
        );
        assert_eq!(cfg.instance_id(), None);
        let set = Config::parse("x.toml", "[kafka]\ninstance_id = \"scorer-${PATH}\"\n").unwrap();
        assert!(set.check_environment().is_ok());
    }

    /// Durations that overflow u64 milliseconds are errors naming the key (they wrapped, or
    /// panicked in a debug build); the forms accepted before still parse to the same value.
    #[test]
    fn durations_parse_and_overflow_is_an_error_naming_the_key() {
        for (text, ms) in [
            ("250ms", 250),
            ("30s", 30_000),
            ("15m", 900_000),
            ("1h", 3_600_000),
            ("7d", 604_800_000),
            ("0s", 0),
            (" 2m ", 120_000),
        ] {
            assert_eq!(parse_duration_ms(text), Ok(Some(ms)), "{text}");
        }
        assert_eq!(parse_duration_ms(""), Ok(None));
        for bad in ["15", "m", "1.5x", "-1s", "soon"] {
            assert!(parse_duration_ms(bad).is_err(), "{bad} parses");
        }
        for (key, table) in [
            ("training.every", "every"),
            ("training.max_age", "max_age"),
            ("training.search_budget", "search_budget"),
        ] {
            for huge in [
                "99999999999999999d",
                "18446744073709551616ms",
                "500000000000000000s",
            ] {
                let e = Config::parse("x.toml", &format!("[training]\n{table} = \"{huge}\"\n"))
                    .unwrap_err()
                    .to_string();
                assert!(e.contains(key) && e.contains(huge), "{huge}: {e}");
            }
        }
    }

    #[test]
    fn unknown_key_names_its_path() {
        let e = Config::parse("x.toml", "[window]\npoints = 100\nhopms = 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.toml") && e.contains("window.hopms") && e.contains("unknown field"),
            "{e}"
        );
    }

    #[test]
    fn bad_value_names_its_path() {
        let e = Config::parse("x.toml", "[output]\nroll_rows = \"many\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("output.roll_rows"), "{e}");
        let e = Config::parse("x.toml", "[window]\nhop_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("window.hop_ms") && e.contains("> 0"), "{e}");
    }

    #[test]
    fn kafka_properties_pass_through() {
        let c = Config::parse(
            "x.toml",
            "[kafka]\nbootstrap_servers = \"b:9092\"\n[kafka.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"fetch.max.bytes\" = \"1048576\"\n",
        )
        .unwrap();
        assert!(!c.is_embedded());
        assert_eq!(c.kafka.properties["security.protocol"], "SASL_SSL");
    }

    #[test]
    fn model_kind_by_name() {
        let c = Config::parse("x.toml", "[model]\nkind = \"mi-svm\"\n").unwrap();
        assert_eq!(c.model.kind, crate::mil::model::ModelKind::MiSvm);
        let e = Config::parse("x.toml", "[model]\nkind = \"svm\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("model.kind") && e.contains("boxsvm"), "{e}");
    }

    #[test]
    fn the_annotated_example_parses() {
        let text = include_str!("../../../deploy/milstream.example.toml");
        Config::parse("deploy/milstream.example.toml", text).unwrap();
    }

    #[test]
    fn drift_warning_delta_defaults_to_rivers_warning_level_and_0_turns_it_off() {
        let c = Config::parse("x.toml", "").unwrap();
        assert_eq!(c.drift.warning_delta, 0.01);
        assert!(c.drift.warning_detector().is_some());
        let off = Config::parse("x.toml", "[drift]\nwarning_delta = 0\n").unwrap();
        assert!(off.drift.warning_detector().is_none());
        let ddm = Config::parse("x.toml", "[drift]\nerrors = \"ddm\"\n").unwrap();
        assert!(
            ddm.drift.warning_detector().is_none(),
            "DDM has its own warning"
        );
        let e = Config::parse("x.toml", "[drift]\nwarning_delta = 0.001\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("drift.warning_delta"), "{e}");
    }
}
