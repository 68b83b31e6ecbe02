//! The deployment files: the Grafana dashboard queries only metrics the daemon exposes,
//! every YAML file parses, promtool accepts the Prometheus config and alert rules, the
//! daemon configs shipped for compose and Kubernetes are valid, and `docker compose config`
//! accepts the compose file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use milstream::config::Config;
use milstream::metrics::Metrics;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every metric family in the daemon's exposition, run-time label values touched.
fn exposed() -> BTreeSet<String> {
    let m = Metrics::new();
    // The daemon's start pretouches the stages' label vocabularies (dead-letter reasons).
    milstream::stream::pretouch_metrics(&m);
    m.register_topic("milstream.points");
    m.records_consumed
        .with_label_values(&["milstream.points", "0"])
        .inc();
    m.consumer_lag
        .with_label_values(&["milstream.points", "0"])
        .set(1);
    m.predictions.with_label_values(&["1", "v000001-x"]).inc();
    m.register_model("series");
    m.set_model_version("series", "v000001-x", "lpboost");
    // The per-version quality families appear with the first graded label.
    let version = ["series", "v000001-x"];
    m.labeled_predictions.with_label_values(&version).inc();
    m.correct_predictions.with_label_values(&version).inc();
    m.model_accuracy.with_label_values(&version).set(1.0);
    m.confusion
        .with_label_values(&["series", "v000001-x", "1", "1"])
        .inc();
    m.encode()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect()
}

/// Metric names in a PromQL expression (identifiers with our prefixes).
fn names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &expr[i..];
        let starts = rest.starts_with("milstream_") || rest.starts_with("process_");
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts && boundary {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push(rest[..len].to_string());
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

fn family(name: &str) -> &str {
    ["_bucket", "_count", "_sum"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

#[test]
fn the_dashboard_queries_only_exposed_metrics() {
    let text =
        std::fs::read_to_string(root().join("deploy/grafana/dashboards/milstream.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("dashboard JSON parses");
    let mut all = Vec::new();
    exprs(&dashboard, &mut all);
    assert!(all.len() >= 10, "{} queries", all.len());
    let exposed = exposed();
    let mut used = BTreeSet::new();
    for e in &all {
        for n in names_in(e) {
            assert!(
                exposed.contains(family(&n)),
                "the dashboard queries {n}, which the daemon does not expose ({e})"
            );
            used.insert(family(&n).to_string());
        }
    }
    for must in [
        "milstream_records_consumed_total",
        "milstream_consumer_lag_messages",
        "milstream_consume_to_durable_seconds",
        "milstream_predictions_total",
        "milstream_training_runs_total",
        "milstream_model_holdout_accuracy",
        "milstream_dead_letters_total",
        "milstream_model_accuracy",
        "milstream_confusion_total",
        "milstream_drift_events_total",
        "milstream_drift_state",
    ] {
        assert!(used.contains(must), "the dashboard shows {must}");
    }
}

fn yaml_files() -> Vec<PathBuf> {
    let mut out = vec![root().join("docker-compose.yml")];
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "yml" || x == "yaml") {
                out.push(p);
            }
        }
    }
    walk(&root().join("deploy"), &mut out);
    out.sort();
    out
}

/// Parses YAML with PyYAML (installed by scripts/test.sh) and returns each file's documents
/// as JSON.
fn yaml_as_json(path: &Path) -> Vec<serde_json::Value> {
    let o = common::tools::python_with("yaml", "pyyaml")
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "{} does not parse as YAML: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_yaml_file_parses_and_the_manifests_are_complete() {
    let files = yaml_files();
    assert!(files.len() >= 8, "{files:?}");
    let mut kinds = BTreeSet::new();
    for f in &files {
        for doc in yaml_as_json(f) {
            if f.starts_with(root().join("deploy/k8s")) {
                assert!(doc["apiVersion"].is_string(), "{}: apiVersion", f.display());
                kinds.insert(doc["kind"].as_str().unwrap().to_string());
                if doc["kind"] == "Deployment" || doc["kind"] == "StatefulSet" {
                    let c = &doc["spec"]["template"]["spec"]["containers"][0];
                    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
                    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
                    assert_eq!(
                        doc["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
                        true
                    );
                }
                if doc["kind"] == "StatefulSet" {
                    // Scorers: static membership from the pod's stable name.
                    let c = &doc["spec"]["template"]["spec"]["containers"][0];
                    let env = c["env"].as_array().expect("scorer env");
                    assert!(
                        env.iter().any(|e| e["name"] == "POD_NAME"
                            && e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"),
                        "POD_NAME from the pod name: {env:?}"
                    );
                    assert!(doc["spec"]["serviceName"].is_string());
                }
                if doc["kind"] == "ConfigMap" {
                    for (name, toml) in doc["data"].as_object().unwrap() {
                        let cfg = Config::parse(name, toml.as_str().unwrap())
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                        if name == "scorer.toml" {
                            assert_eq!(cfg.kafka.instance_id, "${POD_NAME}");
                        }
                    }
                }
            }
            if f.ends_with("docker-compose.yml") {
                for s in ["kafka", "kafka-init", "milstream", "prometheus", "grafana"] {
                    assert!(doc["services"][s].is_object(), "compose service {s}");
                }
                assert_eq!(doc["services"]["grafana"]["ports"][0], "3000:3000");
            }
        }
    }
    assert!(
        ["ConfigMap", "Deployment", "StatefulSet", "Service"]
            .iter()
            .all(|k| kinds.contains(*k)),
        "{kinds:?}"
    );
    let compose_cfg = root().join("deploy/compose/milstream.toml");
    Config::parse(
        "deploy/compose/milstream.toml",
        &std::fs::read_to_string(compose_cfg).unwrap(),
    )
    .unwrap();
}

/// The scorers' `instance_id = "scorer-${POD_NAME}"` form run where the variable is unset
/// (outside the StatefulSet): the daemon refuses to start, naming the variable and the key,
/// instead of joining with the id "scorer-" that every such pod would share (an unset
/// variable expanded to ""). The same file parses anywhere (the ConfigMap test above).
#[test]
fn an_unset_variable_in_instance_id_stops_the_daemon_at_start_up() {
    let dir = common::scratch("unset-var");
    let path = dir.join("scorer.toml");
    std::fs::write(
        &path,
        "[kafka]\ninstance_id = \"scorer-${MILSTREAM_TEST_UNSET_POD_NAME}\"\n[http]\nlisten = \"\"\n",
    )
    .unwrap();
    let log = dir.join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["run", "--config", path.to_str().unwrap()])
        .env_remove("MILSTREAM_TEST_UNSET_POD_NAME")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("milstream runs");
    // Before, it started (with the id "scorer-") and ran: stop it after a while.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.is_some_and(|s| !s.success()),
        "started anyway ({status:?}):\n{stderr}"
    );
    assert!(
        stderr.contains("MILSTREAM_TEST_UNSET_POD_NAME") && stderr.contains("kafka.instance_id"),
        "{stderr}"
    );
}

#[test]
fn promtool_accepts_the_config_and_the_alert_rules() {
    for args in [
        vec!["check", "rules", "deploy/prometheus/alerts.yml"],
        vec!["check", "config", "deploy/prometheus/prometheus.yml"],
    ] {
        let o = common::tools::promtool()
            .args(&args)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn docker_compose_accepts_the_stack() {
    // `config` only parses and resolves the file: no Docker engine needed. The compose v2
    // plugin where it exists, else Debian's docker-compose (scripts/test.sh installs it).
    let v2 = Command::new("docker")
        .args(["compose", "version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut cmd = if v2 {
        let mut c = Command::new("docker");
        c.arg("compose");
        c
    } else {
        assert!(
            Command::new("docker-compose")
                .arg("version")
                .output()
                .is_ok(),
            "neither `docker compose` nor `docker-compose` found: run the tests with \
             `scripts/test.sh`, which installs it (Debian: apt-get install docker-compose)"
        );
        Command::new("docker-compose")
    };
    let o = cmd
        .args(["-f", "docker-compose.yml", "config", "--quiet"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "docker compose config: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The metrics table of docs/OPERATIONS.md names every metric the daemon exposes.
#[test]
fn the_operations_page_documents_every_metric() {
    let page = std::fs::read_to_string(root().join("docs/OPERATIONS.md")).unwrap();
    let table = page
        .split("\n## Metrics\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/OPERATIONS.md has a `## Metrics` section");
    for name in exposed().iter().filter(|n| n.starts_with("milstream_")) {
        assert!(
            table.contains(&format!("| `{name}` |")),
            "the metrics table of docs/OPERATIONS.md lacks {name}"
        );
    }
}

/// The Parquet columns documented in schemas/README.md are exactly those written.
#[test]
fn the_parquet_schemas_are_documented() {
    use milstream::stream::output::arrow::examples::EXAMPLE_SCHEMA;
    use milstream::stream::output::arrow::predictions::{DEAD_LETTER_SCHEMA, PREDICTION_SCHEMA};
    use milstream::stream::output::arrow::quality::{DRIFT_EVENT_SCHEMA, EVALUATION_SCHEMA};
    let readme = std::fs::read_to_string(root().join("schemas/README.md")).unwrap();
    for schema in [
        &*PREDICTION_SCHEMA,
        &*DEAD_LETTER_SCHEMA,
        &*EXAMPLE_SCHEMA,
        &*EVALUATION_SCHEMA,
        &*DRIFT_EVENT_SCHEMA,
    ] {
        for f in schema.fields() {
            assert!(
                readme.contains(&format!("| `{}` |", f.name())),
                "schemas/README.md does not document column {}",
                f.name()
            );
        }
    }
    // And the key-value metadata every file carries.
    let seg = milstream::stream::output::sink::Segment::new("t", 0, 0, 0);
    for (key, _) in seg.file_metadata() {
        assert!(
            readme.contains(&format!("| `{key}` |")),
            "schemas/README.md does not document file metadata {key}"
        );
    }
}

/// The SASL password is in no file: the ConfigMap reads `${KAFKA_SASL_PASSWORD}`, which
/// both workloads map from the Secret `milstream-kafka` (required: a missing Secret fails
/// the pod at creation, naming it). Loaded where the variable is set, the config holds it.
#[test]
fn the_sasl_password_comes_from_a_kubernetes_secret() {
    let k8s = root().join("deploy/k8s");
    let configmap = yaml_as_json(&k8s.join("configmap.yaml")).remove(0);
    for (name, toml) in configmap["data"].as_object().unwrap() {
        let toml = toml.as_str().unwrap();
        let cfg = Config::parse(name, toml).unwrap();
        let props = &cfg.kafka.properties;
        assert_eq!(props["sasl.password"], "${KAFKA_SASL_PASSWORD}", "{name}");
        let dir = common::scratch(&format!("secret-{name}"));
        let path = dir.join(name);
        std::fs::write(&path, toml).unwrap();
        // The variables the workloads set: load (as the daemon does) expands them.
        std::env::set_var("KAFKA_SASL_PASSWORD", "from-the-secret");
        std::env::set_var("POD_NAME", "milstream-scorer-0");
        let loaded = Config::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.kafka.properties["sasl.password"], "from-the-secret");
        assert!(!format!("{loaded:?}").contains("from-the-secret"));
    }
    for workload in ["scorer.yaml", "trainer.yaml"] {
        let doc = yaml_as_json(&k8s.join(workload)).remove(0);
        let c = &doc["spec"]["template"]["spec"]["containers"][0];
        let env = c["env"].as_array().expect("env");
        let from_secret = env
            .iter()
            .find(|e| e["name"] == "KAFKA_SASL_PASSWORD")
            .unwrap_or_else(|| panic!("{workload}: no KAFKA_SASL_PASSWORD: {env:?}"));
        let key = &from_secret["valueFrom"]["secretKeyRef"];
        assert_eq!(key["name"], "milstream-kafka", "{workload}");
        assert_eq!(key["key"], "sasl-password", "{workload}");
        assert_ne!(key["optional"], true, "{workload}: required");
    }
}
