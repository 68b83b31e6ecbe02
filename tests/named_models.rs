//! Several named models in one daemon (`[[models]]`), against the mock cluster: two series
//! models with different routes each score only their series, learn only from their own
//! labels and retrain independently into versions of their own registries; a series (or a
//! label) no route matches is a `no_model` dead letter naming its id.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::stream::*;
use common::{load, scratch};
use milstream::mil::{Dataset, Sample};

const T0: i64 = 1_700_000_001_000;
const SERIES: [&str; 5] = ["pump-0", "pump-1", "fan-0", "fan-1", "conveyor-0"];

/// Kafka messages: (topic, key, payload).
type Messages = Vec<(String, String, Vec<u8>)>;

/// The label a series gets: pumps keep GunPoint's classes but swapped (so the pump champion
/// is wrong on them), fans get classes of their own names.
fn label_of(id: &str, truth: &str) -> String {
    match (id.starts_with("pump"), truth) {
        (true, "1") => "2".into(),
        (true, _) => "1".into(),
        (false, "1") => "ok".into(),
        (false, _) => "worn".into(),
    }
}

/// Round `r`: every series emits one GunPoint test series (150 points, 10 ms apart), then,
/// when `labeled`, a label for it.
fn round(test: &Dataset, r: usize, labeled: bool) -> Messages {
    let t = T0 + r as i64 * HOP_MS;
    let mut msgs = Vec::new();
    let picks: Vec<usize> = (0..SERIES.len())
        .map(|s| (s * 37 + r * 11) % test.len())
        .collect();
    for j in 0..W {
        for (s, &i) in picks.iter().enumerate() {
            let Sample::Series(v) = &test.samples[i] else {
                unreachable!()
            };
            let id = SERIES[s];
            let rec = format!(
                r#"{{"series_id":"{id}","ts":{},"value":{}}}"#,
                t + j as i64 * SPACING_MS,
                v[j]
            );
            msgs.push((POINTS.to_string(), id.to_string(), rec.into_bytes()));
        }
    }
    if labeled {
        let end = t + (W as i64 - 1) * SPACING_MS;
        for (s, &i) in picks.iter().enumerate() {
            let id = SERIES[s];
            let l = label_of(id, &test.labels[i]);
            let rec = format!(r#"{{"series_id":"{id}","start":{t},"end":{end},"label":"{l}"}}"#);
            msgs.push((LABELS.to_string(), id.to_string(), rec.into_bytes()));
        }
    }
    msgs
}

fn current(registry: &Path) -> String {
    std::fs::read_to_string(registry.join("current"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn classes_of(registry: &Path, version: &str) -> Vec<String> {
    let card: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(registry.join(version).join("card.json")).unwrap(),
    )
    .unwrap();
    serde_json::from_value(card["classes"].clone()).unwrap()
}

#[test]
fn two_named_series_models_score_and_retrain_only_their_own_series() {
    let dir = scratch("named");
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let test = load("GunPoint_TEST.csv");
    let port = free_port();
    let extra = format!(
        r#"
[training]
dir = "{training}"
label_wait_ms = 20000
every = ""
after_examples = 8
holdout = 0.25
tolerance = 0.0
min_examples = 8

[[models]]
name = "pumps"
ids = "pump-*"
path = "{model}"

[[models]]
name = "fans"
ids = "fan-?"
path = "{model}"
[models.training]
holdout = 0.2
"#,
        training = dir.join("training").display(),
        model = model_path.display(),
    );
    let mut cfg = config(&bootstrap, &out, &model_path, "named", &extra);
    cfg.http.listen = format!("127.0.0.1:{port}");
    let pumps_registry = cfg.named_registry_dir(&cfg.models[0]).unwrap();
    let fans_registry = cfg.named_registry_dir(&cfg.models[1]).unwrap();
    let (daemon, stop) = spawn_daemon(cfg);

    // Labeled rounds until both models have promoted a version of their own.
    let p = producer(&bootstrap);
    let promoted = |model: &str| {
        metric(
            port,
            &format!("milstream_training_runs_total{{model=\"{model}\",outcome=\"promoted\"}}"),
        )
    };
    let mut r = 0;
    while r < 40 && !(promoted("pumps") >= 1.0 && promoted("fans") >= 1.0) {
        produce_all(&p, &round(&test, r, true));
        std::thread::sleep(Duration::from_millis(400));
        r += 1;
    }
    let both = wait_until(Duration::from_secs(60), || {
        promoted("pumps") >= 1.0 && promoted("fans") >= 1.0
    });
    // Two unlabeled rounds after the promotions (the second closes the first's windows).
    let after = r;
    produce_all(&p, &round(&test, after, false));
    produce_all(&p, &round(&test, after + 1, false));
    let t_after = T0 + after as i64 * HOP_MS;
    let scored = wait_until(Duration::from_secs(60), || {
        let rows = read_predictions(&out);
        ["pump-0", "pump-1", "fan-0", "fan-1"].iter().all(|id| {
            rows.iter()
                .any(|r| r.key == *id && r.start == Some(t_after))
        })
    });
    let text = scrape(port);
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(both, "both models promoted after {r} rounds: {text}");
    assert!(scored, "the windows after the promotions were scored");

    // Each model scored only its own series; the conveyor has no model.
    let rows = read_predictions(&out);
    let mut names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in &rows {
        names
            .entry(row.key.clone())
            .or_default()
            .insert(row.model_name.clone());
    }
    let one = |s: &str| BTreeSet::from([s.to_string()]);
    assert_eq!(names["pump-0"], one("pumps"));
    assert_eq!(names["pump-1"], one("pumps"));
    assert_eq!(names["fan-0"], one("fans"));
    assert_eq!(names["fan-1"], one("fans"));
    assert!(!names.contains_key("conveyor-0"), "{names:?}");
    let dead = read_dead_letters(&out);
    let no_model: Vec<_> = dead.iter().filter(|d| d.3 == "no_model").collect();
    assert!(!no_model.is_empty(), "conveyor points are dead letters");
    assert!(
        no_model.iter().all(|d| d.4.contains("'conveyor-0'")),
        "{no_model:?}"
    );
    // Its labels too, on the labels topic.
    assert!(
        no_model.iter().any(|d| d.0 == LABELS),
        "the conveyor's labels are no_model dead letters: {no_model:?}"
    );

    // Each promoted version learned only its own labels: the pump model knows the
    // (swapped) GunPoint classes, the fan model only the fans' own class names.
    let (pv, fv) = (current(&pumps_registry), current(&fans_registry));
    assert!(pv.as_str() >= "v000002", "pumps promoted a version: {pv}");
    assert!(fv.as_str() >= "v000002", "fans promoted a version: {fv}");
    assert_eq!(classes_of(&pumps_registry, &pv), ["1", "2"]);
    assert_eq!(classes_of(&fans_registry, &fv), ["ok", "worn"]);

    // The rows after the promotions carry each model's own promoted version.
    for row in rows.iter().filter(|r| r.start == Some(t_after)) {
        let want = if row.key.starts_with("pump") {
            &pv
        } else {
            &fv
        };
        assert_eq!(&row.model_version, want, "{row:?}");
    }
    assert!(
        text.contains("milstream_model_info{kind=\"lpboost\",model=\"pumps\""),
        "{text}"
    );
    assert!(
        text.contains("milstream_model_info{kind=\"lpboost\",model=\"fans\""),
        "{text}"
    );
}

/// README's two-model example is a valid configuration, and each entry keeps its settings.
#[test]
fn the_readme_example_of_several_models_parses() {
    let readme = std::fs::read_to_string(common::data_path("../../README.md")).unwrap();
    let section = readme
        .split("### Several models in one daemon")
        .nth(1)
        .expect("README has the section");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the section has a TOML block");
    let cfg = milstream::config::Config::parse("README", toml).unwrap();
    let names: Vec<&str> = cfg.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["pumps", "fans", "molecules"]);
    assert_eq!(cfg.models[1].training.holdout, Some(0.3));
    assert_eq!(cfg.models[2].input, milstream::config::ModelInput::Bags);
}
