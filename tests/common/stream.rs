//! Helpers for the daemon's integration tests: a mock cluster, a known GunPoint stream, the
//! daemon in-process or as a child process, and an arrow-rs reader of its output.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType, UInt32Type};
use arrow_array::Array;
use milstream::config::Config;
use milstream::mil::{Model, Sample};
use milstream::stream::embedded::{gunpoint_train, start_mock_cluster, train_embedded_model};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

pub const POINTS: &str = "milstream.points";
pub const BAGS: &str = "milstream.bags";
pub const LABELS: &str = "milstream.labels";
pub const PREDICTIONS: &str = "milstream.predictions";
pub const MODELS: &str = "milstream.models";
pub const W: usize = 150;
pub const HOP_MS: i64 = 1_500;
pub const SPACING_MS: i64 = 10;

/// A mock cluster with the three input topics and the models topic of `partitions` partitions each.
pub fn cluster(partitions: i32) -> String {
    start_mock_cluster(
        vec![POINTS.into(), BAGS.into(), LABELS.into(), MODELS.into()],
        partitions,
    )
    .expect("mock cluster starts")
}

/// The embedded model, trained once and saved where the daemon can load it.
pub fn model_file(dir: &Path) -> (PathBuf, Model) {
    let model = train_embedded_model().expect("GunPoint trains");
    let path = dir.join("model.json");
    std::fs::write(&path, model.to_json()).unwrap();
    (path, model)
}

pub fn producer(bootstrap: &str) -> BaseProducer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "2")
        .create()
        .expect("producer")
}

/// Produces and waits for every message to be acknowledged.
pub fn produce_all(p: &BaseProducer, msgs: &[(String, String, Vec<u8>)]) {
    for (topic, key, payload) in msgs {
        loop {
            match p.send(BaseRecord::to(topic).key(key).payload(payload)) {
                Ok(()) => break,
                Err((_, _)) => {
                    p.poll(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(30)).expect("flush");
}

/// One series of the known stream: points every 10 ms from a multiple of the hop, made of
/// GunPoint training series back to back, so windows coincide with whole series.
#[derive(Clone, Debug)]
pub struct KnownSeries {
    pub id: String,
    pub points: Vec<(i64, f64)>,
}

pub fn known_stream(n_series: usize, series_each: usize, t0: i64) -> Vec<KnownSeries> {
    let train = gunpoint_train();
    let mut out = Vec::new();
    for s in 0..n_series {
        let mut points = Vec::new();
        for k in 0..series_each {
            let Sample::Series(v) = &train.samples[(s * 7 + k * 3) % train.len()] else {
                unreachable!()
            };
            for (j, &x) in v.iter().enumerate() {
                points.push((t0 + ((k * 150 + j) as i64) * SPACING_MS, x));
            }
        }
        out.push(KnownSeries {
            id: format!("sensor-{s}"),
            points,
        });
    }
    out
}

/// Point messages, one record per message, interleaved across series in time order.
pub fn point_messages(stream: &[KnownSeries]) -> Vec<(String, String, Vec<u8>)> {
    let n = stream.iter().map(|s| s.points.len()).max().unwrap_or(0);
    let mut msgs = Vec::new();
    for j in 0..n {
        for s in stream {
            if let Some(&(ts, v)) = s.points.get(j) {
                msgs.push((
                    POINTS.to_string(),
                    s.id.clone(),
                    format!(r#"{{"series_id":"{}","ts":{ts},"value":{v}}}"#, s.id).into_bytes(),
                ));
            }
        }
    }
    msgs
}

/// The windows the daemon must emit, by the rule in stream::score::window: when a point crosses a
/// hop boundary, the last W points before it, if there are W.
pub fn expected_windows(stream: &[KnownSeries]) -> BTreeMap<(String, i64, i64), Vec<f64>> {
    let mut out = BTreeMap::new();
    for s in stream {
        for j in 1..s.points.len() {
            let (prev, cur) = (s.points[j - 1].0, s.points[j].0);
            if prev.div_euclid(HOP_MS) < cur.div_euclid(HOP_MS) && j >= W {
                let w: Vec<f64> = s.points[j - W..j].iter().map(|p| p.1).collect();
                out.insert((s.id.clone(), s.points[j - W].0, prev), w);
            }
        }
    }
    out
}

/// A daemon configuration for tests: real-cluster mode against `bootstrap`, fast rebalances,
/// small files, the given model, HTTP on a free port.
pub fn config(bootstrap: &str, out: &Path, model: &Path, group: &str, extra: &str) -> Config {
    let text = format!(
        r#"
[kafka]
bootstrap_servers = "{bootstrap}"
group_id = "{group}"
[kafka.properties]
"session.timeout.ms" = "6000"
"heartbeat.interval.ms" = "500"
"topic.metadata.refresh.interval.ms" = "1000"
[window]
points = {W}
hop_ms = {HOP_MS}
[model]
series_path = "{}"
[output]
dir = "{}"
roll_rows = 40
roll_age_ms = 300
[commit]
interval_ms = 200
[http]
listen = "127.0.0.1:0"
[shutdown]
grace_ms = 10000
{training}
{extra}
"#,
        model.display(),
        out.display(),
        // Retraining (and with it the default model registry) only where a test asks for it
        // with its own [training] section.
        training = if extra.contains("[training]") {
            ""
        } else {
            "[training]\nenabled = false"
        },
    );
    let path = out.parent().unwrap().join(format!("{group}.toml"));
    std::fs::write(&path, &text).unwrap();
    Config::parse("test config", &text).expect("test config parses")
}

/// The config written next to the output folder, for child processes.
pub fn config_path(out: &Path, group: &str) -> PathBuf {
    out.parent().unwrap().join(format!("{group}.toml"))
}

/// Runs the daemon in-process on its own runtime thread; send `true` to stop it.
pub fn spawn_daemon(
    cfg: Config,
) -> (
    std::thread::JoinHandle<anyhow::Result<()>>,
    tokio::sync::watch::Sender<bool>,
) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let h = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let r = rt.block_on(milstream::stream::run(cfg, Default::default(), rx));
        rt.shutdown_timeout(Duration::from_secs(1));
        r
    });
    (h, tx)
}

/// A prediction row as read back from Parquet.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub kind: String,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub label: String,
    pub scores: Vec<f64>,
    pub model_version: String,
    pub model_name: String,
    pub source_partition: i32,
    pub source_offset: i64,
    pub file: String,
    /// The findings as (text, value, start, end, hypotheses), and their share.
    pub findings: Vec<FindingCells>,
    pub shown_share: Option<f64>,
}

/// The visible Parquet files under `root/sub`, at any depth (`date=`, `date=/hour=`).
fn parquet_files(root: &Path, sub: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for f in entries.flatten() {
            let p = f.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "parquet")
                && !f.file_name().to_string_lossy().starts_with('.')
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join(sub), &mut out);
    out.sort();
    out
}

/// Every temp file left anywhere under the output root.
pub fn temp_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["predictions", "dead_letters", "arrow"] {
        let Ok(dates) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        for d in dates.flatten() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                if f.file_name().to_string_lossy().ends_with(".tmp") {
                    out.push(f.path());
                }
            }
        }
    }
    out
}

/// All prediction rows under `root`, read with arrow-rs.
pub fn read_predictions(root: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    for path in parquet_files(root, "predictions") {
        let file = File::open(&path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let b = batch.unwrap();
            let col = |n: &str| {
                b.column_by_name(n)
                    .unwrap_or_else(|| panic!("column {n}"))
                    .clone()
            };
            let key = col("key");
            let key = key.as_string::<i32>();
            let kind = col("kind");
            let kind = kind.as_string::<i32>();
            let start = col("window_start");
            let start = start.as_primitive::<TimestampMicrosecondType>();
            let end = col("window_end");
            let end = end.as_primitive::<TimestampMicrosecondType>();
            let label = col("label");
            let label = label.as_string::<i32>();
            let scores = col("scores");
            let scores = scores.as_list::<i32>();
            let version = col("model_version");
            let version = version.as_string::<i32>();
            let name = col("model_name");
            let name = name.as_string::<i32>();
            let part = col("source_partition");
            let part = part.as_primitive::<Int32Type>();
            let off = col("source_offset");
            let off = off.as_primitive::<Int64Type>();
            let f_text = col("finding_text");
            let f_text = f_text.as_list::<i32>();
            let f_value = col("finding_value");
            let f_value = f_value.as_list::<i32>();
            let f_start = col("finding_start");
            let f_start = f_start.as_list::<i32>();
            let f_end = col("finding_end");
            let f_end = f_end.as_list::<i32>();
            let f_hyp = col("finding_hypotheses");
            let f_hyp = f_hyp.as_list::<i32>();
            let share = col("shown_share");
            let share = share.as_primitive::<Float64Type>();
            for i in 0..b.num_rows() {
                let texts = f_text.value(i);
                let texts = texts.as_string::<i32>();
                let values = f_value.value(i);
                let values = values.as_primitive::<Float64Type>();
                let starts = f_start.value(i);
                let starts = starts.as_primitive::<UInt32Type>();
                let ends = f_end.value(i);
                let ends = ends.as_primitive::<UInt32Type>();
                let hyps = f_hyp.value(i);
                let hyps = hyps.as_primitive::<UInt32Type>();
                let findings = (0..texts.len())
                    .map(|k| {
                        (
                            texts.value(k).to_string(),
                            values.value(k),
                            starts.value(k),
                            ends.value(k),
                            hyps.value(k),
                        )
                    })
                    .collect();
                rows.push(Row {
                    key: key.value(i).to_string(),
                    kind: kind.value(i).to_string(),
                    start: (!start.is_null(i)).then(|| start.value(i) / 1000),
                    end: (!end.is_null(i)).then(|| end.value(i) / 1000),
                    label: label.value(i).to_string(),
                    scores: scores
                        .value(i)
                        .as_primitive::<Float64Type>()
                        .values()
                        .to_vec(),
                    model_version: version.value(i).to_string(),
                    model_name: name.value(i).to_string(),
                    source_partition: part.value(i),
                    source_offset: off.value(i),
                    file: path.file_name().unwrap().to_string_lossy().into_owned(),
                    findings,
                    shown_share: (!share.is_null(i)).then(|| share.value(i)),
                });
            }
        }
    }
    rows
}

/// A finding as the Parquet rows hold it: (text, value, start, end, hypotheses).
pub type FindingCells = (String, f64, u32, u32, u32);

/// The findings and their share a prediction row of `model` should carry for `sample`
/// (a window of `points` points, 0 for a bag): `predict --explain`'s, from the offline
/// explanation, with the daemon's default `window.top_contributions`.
pub fn offline_findings(
    model: &Model,
    sample: &Sample,
    points: usize,
) -> (Vec<FindingCells>, Option<f64>) {
    let e = model.explain(sample).unwrap();
    let (findings, share) =
        milstream::stream::ingest::record::FindingSummary::of(&e, points, 3, model);
    let findings = findings
        .unwrap_or_default()
        .into_iter()
        .map(|f| (f.text, f.value, f.start, f.end, f.hypotheses))
        .collect();
    (findings, share)
}

/// (offset, reason, partition, topic) of every dead-letter row.
pub fn read_dead_letters(root: &Path) -> Vec<(String, i32, i64, String, String)> {
    let mut rows = Vec::new();
    for path in parquet_files(root, "dead_letters") {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let b = batch.unwrap();
            let topic = b
                .column_by_name("topic")
                .unwrap()
                .as_string::<i32>()
                .clone();
            let part = b
                .column_by_name("partition")
                .unwrap()
                .as_primitive::<Int32Type>()
                .clone();
            let off = b
                .column_by_name("offset")
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone();
            let reason = b
                .column_by_name("reason")
                .unwrap()
                .as_string::<i32>()
                .clone();
            let detail = b
                .column_by_name("detail")
                .unwrap()
                .as_string::<i32>()
                .clone();
            for i in 0..b.num_rows() {
                rows.push((
                    topic.value(i).to_string(),
                    part.value(i),
                    off.value(i),
                    reason.value(i).to_string(),
                    detail.value(i).to_string(),
                ));
            }
        }
    }
    rows
}

/// Polls `f` until it returns true or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    f()
}

/// Distinct window keys among `rows`.
pub fn window_keys(rows: &[Row]) -> std::collections::BTreeSet<(String, i64, i64)> {
    rows.iter()
        .filter(|r| r.kind == "window")
        .map(|r| (r.key.clone(), r.start.unwrap(), r.end.unwrap()))
        .collect()
}

/// Rows in every Arrow IPC stream file (`.arrows`) under the predictions folder.
pub fn count_ipc_rows(root: &Path) -> usize {
    let mut n = 0;
    let Ok(dates) = std::fs::read_dir(root.join("arrow")) else {
        return 0;
    };
    for d in dates.flatten() {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "arrows") {
                let reader =
                    arrow_ipc::reader::StreamReader::try_new(File::open(f.path()).unwrap(), None)
                        .unwrap();
                n += reader.map(|b| b.unwrap().num_rows()).sum::<usize>();
            }
        }
    }
    n
}

/// Keys of every JSON prediction on `topic`, read from the beginning until `expect` or a timeout.
pub fn consume_prediction_keys(bootstrap: &str, topic: &str, expect: usize) -> Vec<String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::Message;
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "prediction-reader")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    c.subscribe(&[topic]).unwrap();
    let mut keys = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    while keys.len() < expect && Instant::now() < end {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(200)) {
            let v: serde_json::Value = serde_json::from_slice(m.payload().unwrap()).unwrap();
            keys.push(format!(
                "{}|{}|{}",
                v["key"].as_str().unwrap(),
                v["window_start_ms"],
                v["window_end_ms"]
            ));
        }
    }
    keys
}

/// A free local TCP port (for a daemon's HTTP endpoint).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of `GET /metrics` on `port` ("" when nothing answers).
pub fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// The value of the first sample line of a scrape that starts with `series`.
pub fn metric(port: u16, series: &str) -> f64 {
    sample(&scrape(port), series)
}

/// The value of the first line of `text` that starts with `series` (NaN if none).
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// A fault to inject into a [`controlled_cluster`].
pub enum Fault {
    /// Take the cluster's one broker down, or bring it up.
    BrokerDown,
    BrokerUp,
    /// The next `n` OffsetCommit requests fail (a non-retriable error, so the daemon's
    /// committer sees each failure).
    FailCommits(usize),
    /// Every request to broker `id` takes this long.
    SlowBroker(i32, Duration),
}

/// A mock cluster like [`cluster`] whose broker can be taken down and whose requests can be
/// made to fail: the cluster lives on its own thread (it is not `Send`), faults go there.
pub fn controlled_cluster(partitions: i32) -> (String, std::sync::mpsc::Sender<Fault>) {
    controlled_cluster_with(partitions, 1, &[])
}

/// [`controlled_cluster`] of `brokers` brokers, with `topics` (name, leader broker) created
/// besides the input topics (whose leaders the mock cluster picks).
pub fn controlled_cluster_with(
    partitions: i32,
    brokers: i32,
    topics: &[(&str, i32)],
) -> (String, std::sync::mpsc::Sender<Fault>) {
    let topics: Vec<(String, i32)> = topics.iter().map(|(t, b)| (t.to_string(), *b)).collect();
    use rdkafka::mocking::MockCluster;
    use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (fault_tx, fault_rx) = std::sync::mpsc::channel::<Fault>();
    std::thread::spawn(move || {
        let cluster = MockCluster::new(brokers).expect("mock cluster");
        for t in [POINTS, BAGS, LABELS, MODELS] {
            cluster.create_topic(t, partitions, 1).expect("topic");
        }
        // With several brokers the inputs stay on broker 1, so slowing another broker
        // slows only what it leads.
        if brokers > 1 {
            for t in [POINTS, BAGS, LABELS, MODELS] {
                for p in 0..partitions {
                    cluster
                        .partition_leader(t, p, Some(1))
                        .expect("partition leader");
                }
            }
        }
        for (t, leader) in &topics {
            cluster.create_topic(t, partitions, 1).expect("topic");
            for p in 0..partitions {
                cluster
                    .partition_leader(t, p, Some(*leader))
                    .expect("partition leader");
            }
        }
        addr_tx.send(cluster.bootstrap_servers()).unwrap();
        // Runs until the test process ends (the sender lives in the test).
        while let Ok(f) = fault_rx.recv() {
            match f {
                Fault::BrokerDown => cluster.broker_down(1).expect("broker down"),
                Fault::BrokerUp => cluster.broker_up(1).expect("broker up"),
                Fault::FailCommits(n) => cluster.request_errors(
                    RDKafkaApiKey::OffsetCommit,
                    &vec![RDKafkaRespErr::RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED; n],
                ),
                Fault::SlowBroker(id, d) => cluster
                    .broker_round_trip_time(id, d)
                    .expect("round trip time"),
            }
        }
        loop {
            std::thread::park();
        }
    });
    (addr_rx.recv().unwrap(), fault_tx)
}

/// The status code of `GET /readyz` on `port` (0 when nothing answers).
pub fn readyz(port: u16) -> u16 {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    let _ = s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// The group's committed offset per partition of `topic` (absent: none committed).
pub fn committed_offsets(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: i32,
) -> BTreeMap<i32, i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Offset, TopicPartitionList};
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = c.committed_offsets(tpl, Duration::from_secs(10)).unwrap();
    got.elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some((e.partition(), o)),
            _ => None,
        })
        .collect()
}

/// `milstream run --config <config>` as a child process, logging at info to `log`.
pub fn spawn_child(config: &Path, log: &Path) -> std::process::Child {
    use std::process::{Command, Stdio};
    Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["run", "--config", config.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("milstream run starts")
}

/// Produces `msgs` in the background at about `per_second`.
pub fn paced_producer(
    bootstrap: String,
    msgs: Vec<(String, String, Vec<u8>)>,
    per_second: usize,
) -> (
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let h = std::thread::spawn(move || {
        let p = producer(&bootstrap);
        let start = Instant::now();
        for (i, chunk) in msgs.chunks(50).enumerate() {
            produce_all(&p, chunk);
            let due = Duration::from_secs_f64(((i + 1) * 50) as f64 / per_second as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        flag.store(true, Ordering::SeqCst);
    });
    (h, done)
}
