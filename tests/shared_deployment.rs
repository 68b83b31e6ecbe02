//! The deployment as shipped, run as a cluster: two scorers and a trainer as separate
//! processes, started from `deploy/k8s/configmap.yaml` itself (rendered with this machine's
//! bootstrap, folders for the bucket and a loopback port, nothing else changed but the
//! test's short timings), sharing one output folder, against one cluster that outlives
//! them (librdkafka's mock cluster, hosted by this test process). Each process is killed
//! with SIGKILL once and restarted under the same static member id. An independent reader
//! (pyarrow, `scripts/cluster_check.py`) then checks that every window is in the predictions
//! exactly once, every label graded exactly once, and no file is partial; and that no file
//! the scorers had committed before the trainer's first start was deleted (the trainer's
//! assignment used to sweep every output tree of every partition from offset 0).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::stream::*;
use milstream::stream::embedded::gunpoint_train;

const PARTITIONS: i32 = 4;
const T0: i64 = 1_764_547_200_000;

/// The ConfigMap's two daemon configurations, read with PyYAML.
fn shipped_configs() -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s/configmap.yaml");
    let o = common::tools::python_with("yaml", "pyyaml")
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))['data']))",
        ])
        .arg(&path)
        .output()
        .expect("python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = |k: &str| data[k].as_str().expect(k).to_string();
    (text("scorer.toml"), text("trainer.toml"))
}

/// A shipped configuration with this test's cluster, folders and timings.
fn render(shipped: &str, bootstrap: &str, dir: &Path, model: &Path) -> String {
    let local = |name: &str| dir.join(name).display().to_string();
    // The cluster here speaks plaintext: the shipped SASL settings go, the test's timings
    // take their place.
    let text: String = shipped
        .lines()
        .filter(|l| !l.starts_with("\"security.protocol\"") && !l.starts_with("\"sasl."))
        .map(|l| format!("{l}\n"))
        .collect();
    let text = text
        .replace("kafka-bootstrap.kafka.svc:9093", bootstrap)
        .replace(
            "[kafka.properties]\n",
            "[kafka.properties]\n\"session.timeout.ms\" = \"6000\"\n\
             \"heartbeat.interval.ms\" = \"500\"\n\
             \"topic.metadata.refresh.interval.ms\" = \"1000\"\n",
        )
        .replace("s3://milstream/out", &local("out"))
        .replace("s3://milstream/models", &local("models"))
        .replace("s3://milstream/training", &local("training"))
        .replace("0.0.0.0:9464", "127.0.0.1:0")
        .replace(
            "[model]\n",
            &format!("[model]\nseries_path = \"{}\"\n", model.display()),
        )
        .replace(
            "[output]\n",
            "[output]\nroll_rows = 40\nroll_age_ms = 300\n",
        );
    assert!(
        !text.contains("s3://") && !text.contains("sasl") && text.contains(bootstrap),
        "the shipped configuration changed shape: {text}"
    );
    assert!(
        text.contains("session.timeout.ms"),
        "no [kafka.properties]: {text}"
    );
    format!("{text}\n[commit]\ninterval_ms = 200\n[shutdown]\ngrace_ms = 10000\n")
}

/// A daemon process, killed if the test ends first (a failed assertion leaves none behind).
struct Pod(Child);

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `milstream run` as the pod `pod` would run it (POD_NAME from the StatefulSet).
fn start(config: &Path, pod: &str, log: PathBuf) -> Pod {
    let child = Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["run", "--config", config.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .env("POD_NAME", pod)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("milstream run starts");
    Pod(child)
}

fn kill(pod: &mut Pod) {
    let _ = pod.0.kill();
    let _ = pod.0.wait();
}

fn stop(pod: &mut Pod) {
    unsafe {
        libc::kill(pod.0.id() as i32, libc::SIGTERM);
    }
    let _ = pod.0.wait();
}

/// One label per GunPoint series of the known stream: its segment and its true class.
fn labels(stream: &[KnownSeries]) -> Vec<(String, String, Vec<u8>)> {
    let train = gunpoint_train();
    let mut out = Vec::new();
    for (s, series) in stream.iter().enumerate() {
        for k in 0..series.points.len() / W {
            let class = &train.labels[(s * 7 + k * 3) % train.len()];
            let (start, end) = (series.points[k * W].0, series.points[k * W + W - 1].0);
            let body = format!(
                r#"{{"series_id":"{}","start":{start},"end":{end},"label":"{class}"}}"#,
                series.id
            );
            out.push((LABELS.to_string(), series.id.clone(), body.into_bytes()));
        }
    }
    out
}

/// The Parquet files under `root` now.
fn files_under(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.insert(p);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, &mut out);
    out
}

/// Everything the scorers received is committed and durable.
fn scorers_caught_up(bootstrap: &str, produced: &BTreeMap<i32, i64>) -> bool {
    let committed = committed_offsets(bootstrap, "milstream", POINTS, PARTITIONS);
    produced
        .iter()
        .all(|(p, n)| committed.get(p).copied().unwrap_or(0) >= *n)
}

/// Messages produced per partition of the points topic so far (the producer's key hash
/// decides the partition; the committed offsets are compared with the partitions' ends).
fn ends(bootstrap: &str) -> BTreeMap<i32, i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    (0..PARTITIONS)
        .map(|p| {
            let (_, high) = c
                .fetch_watermarks(POINTS, p, Duration::from_secs(10))
                .unwrap();
            (p, high)
        })
        .collect()
}

#[test]
fn two_scorers_and_a_trainer_sharing_a_store_lose_nothing() {
    let dir = common::scratch("shared-deployment");
    let (scorer_toml, trainer_toml) = shipped_configs();
    let bootstrap = cluster(PARTITIONS);
    let (model, _) = model_file(&dir);
    let scorer_cfg = dir.join("scorer.toml");
    let trainer_cfg = dir.join("trainer.toml");
    std::fs::write(&scorer_cfg, render(&scorer_toml, &bootstrap, &dir, &model)).unwrap();
    std::fs::write(
        &trainer_cfg,
        render(&trainer_toml, &bootstrap, &dir, &model),
    )
    .unwrap();
    let (out, training) = (dir.join("out"), dir.join("training"));
    let log = |name: &str, n: u32| dir.join(format!("{name}-{n}.log"));

    let stream = known_stream(6, 9, T0);
    let points = point_messages(&stream);
    let expected = expected_windows(&stream);
    let labels = labels(&stream);
    let third = points.len() / 3;
    let p = producer(&bootstrap);

    let mut scorers = [
        start(&scorer_cfg, "milstream-scorer-0", log("scorer-0", 0)),
        start(&scorer_cfg, "milstream-scorer-1", log("scorer-1", 0)),
    ];
    produce_all(&p, &points[..third]);
    let first = ends(&bootstrap);
    assert!(
        wait_until(Duration::from_secs(120), || scorers_caught_up(
            &bootstrap, &first
        )),
        "the scorers did not commit the first third (logs in {})",
        dir.display()
    );
    // What the scorers committed before the trainer ever ran.
    let committed_before = files_under(&out.join("predictions"));
    assert!(!committed_before.is_empty());

    let mut trainer = start(&trainer_cfg, "trainer", log("trainer", 0));
    produce_all(&p, &labels);
    produce_all(&p, &points[third..2 * third]);
    std::thread::sleep(Duration::from_secs(4));
    let lost: Vec<_> = committed_before.iter().filter(|f| !f.exists()).collect();
    assert!(
        lost.is_empty(),
        "files the scorers had committed were deleted after the trainer started: {lost:?}"
    );

    // Three kills, each followed by a restart under the same member id.
    kill(&mut scorers[0]);
    scorers[0] = start(&scorer_cfg, "milstream-scorer-0", log("scorer-0", 1));
    std::thread::sleep(Duration::from_secs(3));
    kill(&mut trainer);
    trainer = start(&trainer_cfg, "trainer", log("trainer", 1));
    produce_all(&p, &points[2 * third..]);
    std::thread::sleep(Duration::from_secs(2));
    kill(&mut scorers[1]);
    scorers[1] = start(&scorer_cfg, "milstream-scorer-1", log("scorer-1", 1));

    let all = ends(&bootstrap);
    let windows_in = || window_keys(&read_predictions(&out)).len();
    assert!(
        wait_until(Duration::from_secs(180), || {
            scorers_caught_up(&bootstrap, &all) && windows_in() >= expected.len()
        }),
        "not every window was written ({} of {}; logs in {})",
        windows_in(),
        expected.len(),
        dir.display()
    );
    let graded = || {
        committed_offsets(&bootstrap, "milstream.trainer", LABELS, PARTITIONS)
            .values()
            .sum::<i64>()
    };
    assert!(
        wait_until(Duration::from_secs(120), || graded() >= labels.len() as i64),
        "the trainer did not commit every label ({} of {})",
        graded(),
        labels.len()
    );
    for s in &mut scorers {
        stop(s);
    }
    stop(&mut trainer);

    let expected_json = dir.join("expected.json");
    let keys: Vec<(String, i64, i64)> = expected.keys().cloned().collect();
    std::fs::write(&expected_json, serde_json::to_string(&keys).unwrap()).unwrap();
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster_check.py");
    let o = common::tools::python_with("pyarrow", "pyarrow")
        .arg(&checker)
        .arg(&out)
        .arg("--training")
        .arg(&training)
        .arg("--expected")
        .arg(&expected_json)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
    eprintln!("cluster check: {report}");
    assert!(
        o.status.success(),
        "the checker found loss or duplicates: {report:#}"
    );
    assert_eq!(report["windows"]["distinct"], expected.len());
    assert_eq!(report["evaluations"]["rows"], labels.len(), "{report:#}");
    let lost: Vec<_> = committed_before.iter().filter(|f| !f.exists()).collect();
    assert!(lost.is_empty(), "committed files were deleted: {lost:?}");
}

/// The registry's `current` pointed back at an older version (a rollback) reaches a scorer
/// at its next poll: it serves `current`, not the highest version number (before, only a
/// newer sequence was ever taken).
#[test]
fn a_registry_rollback_reaches_the_scorers() {
    use milstream::stream::lifecycle::registry::{ModelCard, Registry};
    use milstream::stream::lifecycle::registry_poll::poll_once;
    let dir = common::scratch("rollback");
    let (_, model) = model_file(&dir);
    let reg = Registry::open(&dir.join("models")).unwrap();
    let v1 = reg
        .publish(&model, &ModelCard::describe(&model, "test"))
        .unwrap();
    let v2 = reg
        .publish(&model, &ModelCard::describe(&model, "test"))
        .unwrap();
    let serving = serving_slot(&model, &v2);
    reg.set_current(&v1).unwrap();
    poll_once(&reg, &serving, W);
    assert_eq!(serving.load().version, v1);
    reg.set_current(&v2).unwrap();
    poll_once(&reg, &serving, W);
    assert_eq!(serving.load().version, v2);
}

/// A record on the compacted models topic with a huge version number does not hold a
/// scorer without a registry in place: the newest record of its name serves (before, every
/// later promotion compared below `v999999999` and was skipped, at every start).
#[test]
fn a_record_on_the_models_topic_cannot_block_later_promotions() {
    let dir = common::scratch("models-topic");
    let bootstrap = cluster(1);
    let (model_path, model) = model_file(&dir);
    let cfg = config(&bootstrap, &dir.join("out"), &model_path, "follow", "");
    let record = |version: &str| {
        let body = format!(
            r#"{{"name":"series","version":"{version}","card":{{}},"model":{}}}"#,
            model.to_json()
        );
        (MODELS.to_string(), "series".to_string(), body.into_bytes())
    };
    produce_all(
        &producer(&bootstrap),
        &[record("v999999999-ffffffff"), record("v000002-00000000")],
    );
    let serving = std::sync::Arc::new(serving_slot(&model, "model-start"));
    let follower = milstream::stream::lifecycle::models_topic::follow(
        &cfg,
        &bootstrap,
        vec![(serving.clone(), None)],
    )
    .unwrap()
    .expect("the models topic is followed");
    let latest = wait_until(Duration::from_secs(60), || {
        serving.load().version == "v000002-00000000"
    });
    follower.stop();
    assert!(latest, "serving {}", serving.load().version);
}

/// A serving slot named `series` holding `model` as `version`.
fn serving_slot(
    model: &milstream::mil::Model,
    version: &str,
) -> milstream::stream::score::serving::ServingModel {
    use milstream::stream::score::window::ScoringModel;
    let start = ScoringModel {
        model: model.clone(),
        version: version.to_string(),
        generation: 0,
    };
    milstream::stream::score::serving::ServingModel::new(
        "series",
        std::sync::Arc::new(start),
        milstream::metrics::Metrics::new(),
    )
}

/// The cluster soak on real components (Tansu, moto): three scorers and a trainer from the
/// shipped ConfigMap, kills, scaling, a store outage, a broker restart and a rollback, the
/// output checked with pyarrow. Slow (minutes a run; Tansu takes 20 minutes to install), so
/// run by hand: `cargo test --release --test shared_deployment -- --ignored cluster_soak`,
/// or `scripts/cluster-soak.sh --runs 20` for the full soak.
#[test]
#[ignore]
fn cluster_soak_on_tansu_and_moto() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = common::scratch("cluster-soak");
    let status = Command::new(root.join("scripts/cluster-soak.sh"))
        .args(["--runs", "1", "--seconds", "60", "--out"])
        .arg(&out)
        .status()
        .expect("the soak script runs");
    assert!(
        status.success(),
        "the cluster soak failed: see {}",
        out.display()
    );
}
