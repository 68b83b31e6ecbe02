//! The embedded default: librdkafka's in-process mock cluster, a first model trained from
//! the GunPoint data bundled into the binary, and a demo feed that replays GunPoint series
//! as live sensors. `milstream run` with no config needs nothing else.

use std::sync::mpsc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use tracing::{info, warn};

use crate::data::parse_ucr;
use crate::mil::{Dataset, FitParams, Model, Sample};

const GUNPOINT_TRAIN: &str = include_str!("../../tests/data/GunPoint_TRAIN.csv");
const GUNPOINT_TEST: &str = include_str!("../../tests/data/GunPoint_TEST.csv");
/// UEA BasicMotions (6 channels x 100 steps, 4 classes), the multichannel sample data.
const BASICMOTIONS_TRAIN: &str = include_str!("../../tests/data/BasicMotions_TRAIN.csv");
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

/// The bundled GunPoint training set.
pub fn gunpoint_train() -> Dataset {
    parse_ucr("GunPoint_TRAIN (bundled)", GUNPOINT_TRAIN).expect("the bundled GunPoint data parses")
}

/// The bundled BasicMotions training set (named channels, from the long CSV's header).
pub fn basicmotions_train() -> Dataset {
    crate::data::multichannel::parse_long("BasicMotions_TRAIN (bundled)", BASICMOTIONS_TRAIN)
        .expect("the bundled BasicMotions data parses")
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

/// Replays GunPoint test series as `sensors` live series: each sensor emits one series
/// after another, points 10 ms apart in event time and each series starting on a multiple
/// of 1,500 ms, so the default window (150 points, hop 1,500 ms) sees whole series. After
/// each series a label record names its segment. Paced at `points_per_second` overall.
pub async fn demo_feed(
    bootstrap: String,
    points_topic: String,
    labels_topic: String,
    sensors: usize,
    points_per_second: u64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
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
    let test = gunpoint_test();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let series_ms = 150 * DEMO_POINT_SPACING_MS;
    let mut t0 = (chrono::Utc::now().timestamp_millis() / series_ms) * series_ms;
    let pause =
        Duration::from_secs_f64(150.0 * sensors.max(1) as f64 / points_per_second.max(1) as f64);
    info!(sensors, points_per_second, "demo feed started");
    loop {
        for s in 0..sensors.max(1) {
            let i = rng.random_range(0..test.len());
            let Sample::Series(values) = &test.samples[i] else {
                continue;
            };
            let id = format!("gunpoint-sensor-{s}");
            for (j, v) in values.iter().enumerate() {
                let rec = format!(
                    r#"{{"series_id":"{id}","ts":{},"value":{v}}}"#,
                    t0 + j as i64 * DEMO_POINT_SPACING_MS
                );
                let _ =
                    producer.send_result(FutureRecord::to(&points_topic).key(&id).payload(&rec));
            }
            if !labels_topic.is_empty() {
                let rec = format!(
                    r#"{{"series_id":"{id}","start":{t0},"end":{},"label":"{}"}}"#,
                    t0 + series_ms - DEMO_POINT_SPACING_MS,
                    test.labels[i]
                );
                let _ =
                    producer.send_result(FutureRecord::to(&labels_topic).key(&id).payload(&rec));
            }
        }
        t0 += series_ms;
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.changed() => break,
        }
    }
}
