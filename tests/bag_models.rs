//! Bag models in the loop, against the mock cluster: with no bag model configured the daemon
//! trains the bundled MUSK1 model at start and scores bag records from any producer, and
//! bag labels retrain it (champion/challenger, registry versions, models topic) into a
//! promoted version whose prediction rows carry it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::stream::*;
use common::{load, scratch};
use milstream::mil::{Dataset, Sample};

/// Kafka messages: (topic, key, payload).
type Messages = Vec<(String, String, Vec<u8>)>;

/// Every MUSK1 bag as a bag record with id `<prefix>-<bag id>`, and the ids.
fn bag_messages(ds: &Dataset, prefix: &str) -> (Messages, Vec<String>) {
    let mut msgs = Vec::new();
    let mut ids = Vec::new();
    for (i, s) in ds.samples.iter().enumerate() {
        let Sample::Bag(b) = s else {
            unreachable!("MUSK1 holds bags")
        };
        let id = format!("{prefix}-{}", ds.ids[i]);
        let instances: Vec<&[f64]> = b.instances().collect();
        let rec = serde_json::json!({"bag_id": id, "instances": instances}).to_string();
        msgs.push((BAGS.to_string(), id.clone(), rec.into_bytes()));
        ids.push(id);
    }
    (msgs, ids)
}

fn bag_rows(out: &Path, prefix: &str) -> Vec<Row> {
    read_predictions(out)
        .into_iter()
        .filter(|r| r.kind == "bag" && r.key.starts_with(prefix))
        .collect()
}

fn swap(label: &str) -> &'static str {
    if label == "1" {
        "0"
    } else {
        "1"
    }
}

/// The issue's first point: a bag record produced by a separate client is scored by the
/// default bag model (MUSK1, trained at start), with no bag model configured and no dead
/// letters. The rows name the model (`bags`) beside its version.
#[test]
fn the_default_bag_model_scores_bags_from_a_separate_producer() {
    let dir = scratch("bag-default");
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let musk = load("musk1.csv");
    let (msgs, ids) = bag_messages(&musk, "mol");
    let cfg = config(&bootstrap, &out, &model_path, "bag-default", "");
    assert!(cfg.model.bags_path.is_none(), "no bag model is configured");
    let (daemon, stop) = spawn_daemon(cfg);
    produce_all(&producer(&bootstrap), &msgs);
    let done = wait_until(Duration::from_secs(90), || {
        bag_rows(&out, "mol-").len() >= ids.len()
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(
        done,
        "only {} of {} bags scored",
        bag_rows(&out, "mol-").len(),
        ids.len()
    );
    assert_eq!(read_dead_letters(&out), vec![], "no dead letters");
    let rows = bag_rows(&out, "mol-");
    let truth: BTreeMap<String, String> = ids.iter().cloned().zip(musk.labels.clone()).collect();
    let hits = rows.iter().filter(|r| truth[&r.key] == r.label).count();
    for r in &rows {
        assert_eq!(r.model_name, "bags");
        assert!(
            r.model_version.starts_with("musk1-embedded-"),
            "{}",
            r.model_version
        );
        assert_eq!(r.scores.len(), 2);
    }
    // The model was trained on these very bags: it should know them.
    let acc = hits as f64 / rows.len() as f64;
    println!("default bag model on MUSK1 (its training bags): {acc:.3}");
    assert!(acc >= 0.9, "accuracy {acc}");
}

/// The issue's bag-retraining point: labels of bags (on the labels topic, read before or
/// after their bags) become bag examples; the trainer fits a bag candidate of the
/// champion's kind, which beats the champion on the newest examples after the classes
/// swap, is published as a new version of the bag model's registry and swapped in; the
/// next bags are scored by it. The series model's registry and training are untouched.
#[test]
fn bag_labels_lead_to_a_promoted_bag_model_version() {
    let dir = scratch("bag-retrain");
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let musk = load("musk1.csv");
    let port = free_port();
    let extra = format!(
        "[training]\ndir = \"{}\"\nlabel_wait_ms = 20000\nevery = \"\"\nafter_examples = 60\n\
         holdout = 0.25\ntolerance = 0.0\nmin_examples = 40\n",
        dir.join("training").display()
    );
    let mut cfg = config(&bootstrap, &out, &model_path, "bag-retrain", &extra);
    cfg.http.listen = format!("127.0.0.1:{port}");
    let bag_registry = cfg.bag_registry_dir().expect("training gives a registry");
    let series_registry = cfg.registry_dir().expect("training gives a registry");
    let (daemon, stop) = spawn_daemon(cfg);

    // Round 0: every bag's swapped class as a label record, produced and consumed first (its
    // segments sealed, then no further label message), then the bags they name: the labels
    // wait and join on the worker's tick, with no message on their partitions to carry them.
    let (bags, ids) = bag_messages(&musk, "r0");
    let labels: Messages = ids
        .iter()
        .zip(&musk.labels)
        .map(|(id, l)| {
            let rec = serde_json::json!({"bag_id": id, "label": swap(l)}).to_string();
            (LABELS.to_string(), id.clone(), rec.into_bytes())
        })
        .collect();
    let p = producer(&bootstrap);
    produce_all(&p, &labels);
    let consumed = wait_until(Duration::from_secs(60), || {
        (0..2)
            .map(|i| {
                metric(
                    port,
                    &format!(
                        "milstream_records_consumed_total{{partition=\"{i}\",topic=\"{LABELS}\"}}"
                    ),
                )
            })
            .sum::<f64>()
            >= ids.len() as f64
    });
    assert!(consumed, "labels not consumed: {}", scrape(port));
    std::thread::sleep(Duration::from_millis(1_000)); // > roll_age_ms: their segments seal
    produce_all(&p, &bags);
    let promoted = wait_until(Duration::from_secs(120), || {
        metric(
            port,
            "milstream_training_runs_total{model=\"bags\",outcome=\"promoted\"}",
        ) >= 1.0
    });
    let current = std::fs::read_to_string(bag_registry.join("current")).unwrap_or_default();
    // Round 1: the same bags, unlabeled, scored by whatever serves now.
    let (msgs, ids1) = bag_messages(&musk, "r1");
    if promoted {
        produce_all(&p, &msgs);
    }
    let scored = promoted
        && wait_until(Duration::from_secs(60), || {
            bag_rows(&out, "r1-").len() >= ids1.len()
        });
    let text = scrape(port);
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(promoted, "no promoted bag model: {text}");
    assert!(scored, "round 1 not scored");

    let current = current.trim().to_string();
    assert!(
        current.starts_with("v000002-"),
        "bag registry current: {current}"
    );
    let card: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(bag_registry.join(&current).join("card.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        card["kind"], "lpboost",
        "a retrain keeps the champion's kind: {card}"
    );
    // The series model has only the version it started with.
    let series_versions: Vec<String> = std::fs::read_dir(&series_registry)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('v'))
        .collect();
    assert_eq!(series_versions.len(), 1, "{series_versions:?}");
    assert!(
        text.contains(
            "milstream_model_info{kind=\"lpboost\",model=\"bags\",model_version=\"v000002-"
        ),
        "{text}"
    );

    let rows = bag_rows(&out, "r1-");
    let truth: BTreeMap<String, String> = ids1
        .iter()
        .cloned()
        .zip(musk.labels.iter().map(|l| swap(l).to_string()))
        .collect();
    let by_new: Vec<&Row> = rows.iter().filter(|r| r.model_version == current).collect();
    assert_eq!(
        by_new.len(),
        rows.len(),
        "every round-1 row carries the promoted version"
    );
    assert!(rows.iter().all(|r| r.model_name == "bags"));
    let hits = rows.iter().filter(|r| truth[&r.key] == r.label).count();
    let acc = hits as f64 / rows.len() as f64;
    println!(
        "promoted bag model on the swapped classes: {acc:.3} ({hits}/{})",
        rows.len()
    );
    // The champion scores about 0.1 here (the classes swapped); the candidate learned them.
    assert!(acc >= 0.75, "accuracy {acc}");
}

/// The embedded default's demo feed sends MUSK1 bags and their labels besides the GunPoint
/// series: the bags are scored by the default bag model (rows of kind `bag`, no dead
/// letters) and their labels become bag examples of that model in the training store.
#[test]
fn the_embedded_demo_feed_sends_bags_and_their_labels() {
    let dir = scratch("demo-bags");
    let out = dir.join("out");
    let training = dir.join("training");
    let text = format!(
        r#"
[kafka]
bootstrap_servers = "embedded"
[output]
dir = "{}"
roll_age_ms = 300
[http]
listen = ""
[training]
dir = "{}"
every = ""
after_examples = 0
[demo]
sensors = 2
points_per_second = 4000
"#,
        out.display(),
        training.display()
    );
    let cfg = milstream::config::Config::parse("demo-bags.toml", &text).unwrap();
    assert!(cfg.demo.feed && cfg.model.bags_path.is_none());
    let (daemon, stop) = spawn_daemon(cfg);
    let bag_examples = || {
        milstream::stream::lifecycle::training::load_store(&training, usize::MAX, None)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.segment.is_none())
            .collect::<Vec<_>>()
    };
    let done = wait_until(Duration::from_secs(90), || {
        bag_rows(&out, "musk1-").len() >= 3 && bag_examples().len() >= 2
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    let rows = bag_rows(&out, "musk1-");
    let examples = bag_examples();
    assert!(
        done,
        "{} demo bags scored, {} bag examples stored",
        rows.len(),
        examples.len()
    );
    for r in &rows {
        assert_eq!(
            (r.kind.as_str(), r.model_name.as_str()),
            ("bag", "bags"),
            "{r:?}"
        );
    }
    for e in &examples {
        assert!(e.key.starts_with("musk1-"), "{e:?}");
        assert_eq!(e.model.as_deref(), Some("bags"));
        assert_eq!(e.dim, 166, "MUSK1's features");
    }
    assert_eq!(read_dead_letters(&out), vec![], "no dead letters");
}
