//! The embedded default: librdkafka's in-process mock cluster, first models trained from
//! the GunPoint series and MUSK1 bags bundled into the binary, and a demo feed that replays
//! GunPoint series as live sensors and MUSK1 bags as bag records, each followed by its label.
//! `milstream run` with no config needs nothing else.

use std::sync::mpsc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use tracing::{info, warn};

use crate::config::DemoDataset;
use crate::data::{parse_mil, parse_ucr};
use crate::mil::{Dataset, FitParams, Model, Sample};

const GUNPOINT_TRAIN: &str = include_str!("../../../../tests/data/GunPoint_TRAIN.csv");
const GUNPOINT_TEST: &str = include_str!("../../../../tests/data/GunPoint_TEST.csv");
/// MUSK1 (UCI, CC BY 4.0; see tests/data/README.md): 92 bags of 166 features, 321 kB.
const MUSK1: &str = include_str!("../../../../tests/data/musk1.csv");
/// The instance dimension of the MUSK1 bags the demo feed sends.
pub const MUSK1_FEATURES: usize = 166;
/// UEA BasicMotions (6 channels x 100 steps, 4 classes), the multichannel sample data.
const BASICMOTIONS_TRAIN: &str = include_str!("../../../../tests/data/BasicMotions_TRAIN.csv");
const BASICMOTIONS_TEST: &str = include_str!("../../../../tests/data/BasicMotions_TEST.csv");
/// GunPoint series are 150 points; the demo spaces points 10 ms apart, so one series spans
/// 1,500 ms, the default hop.
pub const DEMO_POINT_SPACING_MS: i64 = 10;

/// Starts the mock cluster on a thread that owns it for the life of the process (it is not
/// `Send`), creates `topics` with `partitions` each, and returns its bootstrap address.
pub fn start_mock_cluster(topics: Vec<String>, partitions: i32) -> anyhow::Result<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("milstream-mock-kafka".into())
        .spawn(move || {
            let cluster = match MockCluster::new(1) {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.send(Err(format!("starting the mock cluster: {e}")));
                    return;
                }
            };
            for t in &topics {
                // The mock broker refuses CreateTopics; create_topic is its own way.
                if let Err(e) = cluster.create_topic(t, partitions, 1) {
                    let _ = tx.send(Err(format!("creating topic {t}: {e}")));
                    return;
                }
            }
            let _ = tx.send(Ok(cluster.bootstrap_servers()));
            loop {
                std::thread::park();
            }
        })?;
    rx.recv()?.map_err(anyhow::Error::msg)
}

/// How long a fetch may wait on librdkafka's mock broker. The mock holds a fetch that
/// finds no data for the whole `fetch.wait.max.ms` (500 ms by default) even when data
/// arrives meanwhile (librdkafka `rdkafka_mock_handlers.c`, `rd_kafka_mock_handle_Fetch`:
/// "we should cut the wait short [...] but that is too much of a hassle"), where a real
/// broker answers as soon as `fetch.min.bytes` are there. Against the mock that hold is
/// pure latency: a paced run of 1,000-point arrays waited p99 0.48 s with it and 0.15 s
/// with 10 ms. The cost is at most 100 empty in-process fetches a second while idle.
pub const MOCK_FETCH_WAIT_MS: &str = "10";

/// The consumer settings a client of the mock broker needs (a `kafka.properties` entry the
/// user set is kept).
pub fn for_mock_broker(kafka: &mut crate::config::KafkaConfig) {
    kafka
        .properties
        .entry("fetch.wait.max.ms".into())
        .or_insert_with(|| MOCK_FETCH_WAIT_MS.into());
}

/// The bundled GunPoint training set.
pub fn gunpoint_train() -> Dataset {
    parse_ucr("GunPoint_TRAIN (bundled)", GUNPOINT_TRAIN).expect("the bundled GunPoint data parses")
}

/// The bundled BasicMotions training set (named channels, from the long CSV's header).
pub fn basicmotions_train() -> Dataset {
    crate::data::multichannel::parse_long("BasicMotions_TRAIN (bundled)", BASICMOTIONS_TRAIN)
        .expect("the bundled BasicMotions data parses")
}

fn basicmotions_test() -> Dataset {
    crate::data::multichannel::parse_long("BasicMotions_TEST (bundled)", BASICMOTIONS_TEST)
        .expect("the bundled BasicMotions data parses")
}

/// The training series of the demo `dataset`.
pub fn demo_train(dataset: DemoDataset) -> Dataset {
    match dataset {
        DemoDataset::Gunpoint => gunpoint_train(),
        DemoDataset::Basicmotions => basicmotions_train(),
    }
}

/// The first series model of `kind` on the demo `dataset` with that kind's defaults.
pub fn train_demo_model(
    dataset: DemoDataset,
    kind: crate::mil::model::ModelKind,
) -> anyhow::Result<Model> {
    match dataset {
        DemoDataset::Gunpoint => train_embedded_model_of(kind),
        DemoDataset::Basicmotions => Ok(Model::fit(
            &basicmotions_train(),
            &FitParams {
                kind,
                ..FitParams::default()
            },
        )?),
    }
}

fn gunpoint_test() -> Dataset {
    parse_ucr("GunPoint_TEST (bundled)", GUNPOINT_TEST).expect("the bundled GunPoint data parses")
}

/// The first model: LPBoost shapelets on GunPoint with the CLI's defaults (about 0.5 s).
pub fn train_embedded_model() -> anyhow::Result<Model> {
    train_embedded_model_of(crate::mil::model::ModelKind::Lpboost)
}

/// The first model of `kind` on GunPoint with that kind's defaults.
pub fn train_embedded_model_of(kind: crate::mil::model::ModelKind) -> anyhow::Result<Model> {
    Ok(Model::fit(
        &gunpoint_train(),
        &FitParams {
            kind,
            ..FitParams::default()
        },
    )?)
}

/// The bundled MUSK1 bags.
pub fn musk1() -> Dataset {
    parse_mil("musk1 (bundled)", MUSK1).expect("the bundled MUSK1 data parses")
}

/// The first bag model: `kind` on MUSK1 with the bag defaults (LPBoost 0.3-0.7 s). Trained
/// once per process and kind: the data and parameters are fixed, so every daemon of a
/// process (the tests start many) starts from the same model.
pub fn train_embedded_bag_model(kind: crate::mil::model::ModelKind) -> anyhow::Result<Model> {
    static TRAINED: std::sync::Mutex<Vec<(crate::mil::model::ModelKind, Model)>> =
        std::sync::Mutex::new(Vec::new());
    let mut trained = TRAINED
        .lock()
        .expect("the embedded bag models are never poisoned: fitting returns errors, not panics");
    if let Some((_, m)) = trained.iter().find(|(k, _)| *k == kind) {
        return Ok(m.clone());
    }
    let m = Model::fit(
        &musk1(),
        &FitParams {
            kind,
            ..FitParams::for_bags()
        },
    )?;
    trained.push((kind, m.clone()));
    Ok(m)
}

/// One point of `sample` at step `k` as a JSON record.
pub fn point_json(id: &str, ts: i64, sample: &Sample, k: usize) -> String {
    match sample {
        Sample::Multi(c) => {
            let values: Vec<String> = c.iter().map(|v| v[k].to_string()).collect();
            format!(
                r#"{{"series_id":"{id}","ts":{ts},"values":[{}]}}"#,
                values.join(",")
            )
        }
        Sample::Series(v) => format!(r#"{{"series_id":"{id}","ts":{ts},"value":{}}}"#, v[k]),
        Sample::Bag(_) => unreachable!("bench data are series"),
    }
}

/// Where the demo feed writes.
pub struct DemoTopics {
    pub points: String,
    /// Empty: no bag records.
    pub bags: String,
    /// Empty: no labels.
    pub labels: String,
}

/// Replays the demo dataset's test series (GunPoint, or six-channel BasicMotions with
/// `values`) as `sensors` live series: each sensor emits one series after another, points
/// 10 ms apart in event time and each series starting on a multiple of its span (GunPoint:
/// 1,500 ms, so the default window of 150 points and hop 1,500 ms sees whole series). After
/// each series a label record names its segment. Each round also sends one MUSK1 bag as a
/// bag record (a fresh id per round) and then its label. Paced at `points_per_second`.
/// After `drift_after` the series' labels name the next class (a concept change).
pub async fn demo_feed(
    bootstrap: String,
    topics: DemoTopics,
    dataset: DemoDataset,
    sensors: usize,
    points_per_second: u64,
    drift_after: Option<Duration>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let started = std::time::Instant::now();
    let producer: FutureProducer = match ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("linger.ms", "5")
        .create()
    {
        Ok(p) => p,
        Err(e) => {
            warn!(%e, "demo feed: cannot create a producer");
            return;
        }
    };
    let test = match dataset {
        DemoDataset::Gunpoint => gunpoint_test(),
        DemoDataset::Basicmotions => basicmotions_test(),
    };
    let len = test.min_series_len().unwrap_or(1).max(1);
    let bags = musk1();
    let mut round = 0u64;
    let DemoTopics {
        points: points_topic,
        bags: bags_topic,
        labels: labels_topic,
    } = topics;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let series_ms = len as i64 * DEMO_POINT_SPACING_MS;
    let mut t0 = (chrono::Utc::now().timestamp_millis() / series_ms) * series_ms;
    let pause = Duration::from_secs_f64(
        len as f64 * sensors.max(1) as f64 / points_per_second.max(1) as f64,
    );
    let prefix = dataset.name();
    info!(
        sensors,
        points_per_second,
        dataset = prefix,
        "demo feed started"
    );
    loop {
        for s in 0..sensors.max(1) {
            let i = rng.random_range(0..test.len());
            let id = format!("{prefix}-sensor-{s}");
            for j in 0..len {
                let ts = t0 + j as i64 * DEMO_POINT_SPACING_MS;
                let rec = point_json(&id, ts, &test.samples[i], j);
                let _ =
                    producer.send_result(FutureRecord::to(&points_topic).key(&id).payload(&rec));
            }
            if !labels_topic.is_empty() {
                let mut label = test.labels[i].clone();
                if drift_after.is_some_and(|d| started.elapsed() >= d) {
                    let classes = test.classes();
                    let k = classes.iter().position(|c| *c == label).unwrap_or(0);
                    label = classes[(k + 1) % classes.len()].clone();
                }
                let rec = format!(
                    r#"{{"series_id":"{id}","start":{t0},"end":{},"label":"{label}"}}"#,
                    t0 + series_ms - DEMO_POINT_SPACING_MS,
                );
                let _ =
                    producer.send_result(FutureRecord::to(&labels_topic).key(&id).payload(&rec));
            }
        }
        if !bags_topic.is_empty() {
            let i = rng.random_range(0..bags.len());
            if let Sample::Bag(b) = &bags.samples[i] {
                let id = format!("musk1-{}-{round}", bags.ids[i]);
                let instances: Vec<&[f64]> = b.instances().collect();
                let rec = serde_json::json!({"bag_id": id, "instances": instances}).to_string();
                let _ = producer.send_result(FutureRecord::to(&bags_topic).key(&id).payload(&rec));
                if !labels_topic.is_empty() {
                    let rec =
                        serde_json::json!({"bag_id": id, "label": bags.labels[i]}).to_string();
                    let _ = producer
                        .send_result(FutureRecord::to(&labels_topic).key(&id).payload(&rec));
                }
            }
            round += 1;
        }
        t0 += series_ms;
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.changed() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mock_brokers_fetch_wait_is_short_unless_the_user_set_one() {
        let mut k = crate::config::KafkaConfig::default();
        for_mock_broker(&mut k);
        assert_eq!(k.properties["fetch.wait.max.ms"], MOCK_FETCH_WAIT_MS);
        let mut k = crate::config::KafkaConfig::default();
        k.properties
            .insert("fetch.wait.max.ms".into(), "250".into());
        for_mock_broker(&mut k);
        assert_eq!(k.properties["fetch.wait.max.ms"], "250");
    }
}
