//! `milstream bench-stream`: end-to-end throughput and latency on the mock cluster with the
//! embedded default's model. Numbers, not assertions.
//!
//! Every run also drains the same topic with a bare consumer (no daemon) and reports the
//! daemon's throughput as a ratio to it: a ratio is comparable across machines and across
//! busy and quiet minutes where a bare points/s figure is not, which is what the guard in
//! `tests/throughput.rs` checks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use serde_json::json;

mod inputs;

use super::embedded::{start_mock_cluster, train_embedded_model};
use super::pipeline::run_pipeline;
use super::score::window::ScoringModel;
use crate::config::Config;
use crate::http::Health;
use crate::metrics::Metrics;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub points: usize,
    /// Points per Kafka message (1 = one record per message; more = a JSON array).
    pub batch: usize,
    pub series: usize,
    pub partitions: i32,
    /// None: pre-produce everything and measure throughput. Some(r): produce at r points/s
    /// while consuming and measure consume-to-durable latency.
    pub rate: Option<u64>,
    pub roll_age_ms: u64,
    /// Drain with a bare consumer only (no daemon): the transport's own ceiling. Otherwise
    /// the bare consumer drains the same topic too (before the daemon; after it when
    /// paced) and the report gives the daemon's throughput as a ratio to it.
    pub baseline: bool,
    /// Where the output goes: None = a temp folder; Some(URL) = an object store
    /// (`s3://bucket/prefix`), with `store_options` as the `[object_store]` table.
    pub output: Option<String>,
    pub store_options: std::collections::BTreeMap<String, String>,
    /// 1: GunPoint points and its model; 6: BasicMotions' six-channel points (`values`)
    /// and a model trained on them.
    pub channels: usize,
    /// Throughput runs: a second daemon pass over the same topic with `[drift]` off (no
    /// evaluation, no detectors), reported beside the first (drift on, the default).
    pub compare_drift: bool,
    /// Throughput runs: Some(n) adds daemon passes over the same topic in turn with the live
    /// view off, on with no page open and on with `n` pages reading its event stream (each
    /// watching a series), reported side by side.
    pub view_clients: Option<usize>,
    /// Throughput runs: two more passes over the same topic (`[drift]` off), writing
    /// Parquet files, then Delta tables (`output.format`), reported side by side.
    pub compare_delta: bool,
    /// Also decode the feed as Avro or Protobuf beside JSON (the three decoders alone, then
    /// a daemon pass over JSON and one over this format) and report them (throughput runs;
    /// `bench-stream --format avro|protobuf`). None, or `Json`: JSON only.
    pub compare_input: Option<crate::config::InputFormat>,
    /// Event time between a series' points (10 ms: the demo's 100 Hz; 1,000 ms: a 1 Hz
    /// sensor, whose hour of label-join history is 3,600 points).
    pub spacing_ms: i64,
}

/// The bench's data: GunPoint, or BasicMotions for six channels.
fn bench_data(channels: usize) -> anyhow::Result<crate::mil::Dataset> {
    match channels {
        1 => Ok(super::embedded::gunpoint_train()),
        6 => Ok(super::embedded::basicmotions_train()),
        c => anyhow::bail!("--channels {c}: the bench has data of 1 or 6 channels"),
    }
}

/// The bench's messages, made on demand: series interleaved as a live stream would send
/// them (each series' k-th message, then every series' (k+1)-th), so a run of hundreds of
/// millions of points holds none of them in memory before the mock cluster has them.
struct Feed {
    data: crate::mil::Dataset,
    series: usize,
    per_series: usize,
    batch: usize,
    spacing_ms: i64,
    /// The shortest sample's length: points cycle through the samples at this period.
    len: usize,
}

impl Feed {
    fn new(opts: &BenchOptions, data: crate::mil::Dataset) -> Self {
        let series = opts.series.max(1);
        let len = data.min_series_len().unwrap_or(1).max(1);
        Self {
            data,
            series,
            per_series: opts.points / series,
            batch: opts.batch.max(1),
            spacing_ms: opts.spacing_ms,
            len,
        }
    }

    fn points(&self) -> usize {
        self.per_series * self.series
    }

    fn messages(&self) -> usize {
        self.per_series.div_ceil(self.batch) * self.series
    }

    /// Message `i`: (key, payload).
    fn message(&self, i: usize) -> (String, String) {
        let (k, s) = (i / self.series, i % self.series);
        let id = format!("bench-{s}");
        let first = k * self.batch;
        let last = (first + self.batch).min(self.per_series);
        let point = |j: usize| {
            let sample = &self.data.samples[(s + j / self.len) % self.data.len()];
            let ts = 1_700_000_001_500 + j as i64 * self.spacing_ms;
            super::embedded::point_json(&id, ts, sample, j % self.len)
        };
        let payload = if self.batch == 1 {
            point(first)
        } else {
            let parts: Vec<String> = (first..last).map(point).collect();
            format!("[{}]", parts.join(","))
        };
        (id, payload)
    }
}

/// The bench's producer: a thread of its own serves the delivery reports, whose messages
/// librdkafka frees only then (polling one report per burst from the feeder let a paced
/// run hold 350 MB of delivered messages, which the report's memory figure counted).
type BenchProducer = ThreadedProducer<rdkafka::producer::DefaultProducerContext>;

fn produce(p: &BenchProducer, topic: &str, feed: &Feed, msgs: std::ops::Range<usize>, flush: bool) {
    for i in msgs {
        let (k, v) = feed.message(i);
        loop {
            match p.send(BaseRecord::to(topic).key(&k).payload(&v)) {
                Ok(()) => break,
                // The local queue is full: the polling thread is freeing delivered ones.
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
    if !flush {
        return;
    }
    if let Err(e) = p.flush(Duration::from_secs(60)) {
        tracing::warn!(%e, in_flight = p.in_flight_count(), "bench producer flush");
    }
}

/// Quantile from a Prometheus histogram by linear interpolation within its bucket.
fn quantile(h: &prometheus::Histogram, q: f64) -> f64 {
    use prometheus::core::Collector;
    let mf = h.collect();
    let m = &mf[0].get_metric()[0];
    let hist = m.get_histogram();
    let total = hist.get_sample_count() as f64;
    if total == 0.0 {
        return f64::NAN;
    }
    let target = q * total;
    let mut prev_bound = 0.0;
    let mut prev_count = 0.0;
    for b in hist.get_bucket() {
        let c = b.cumulative_count() as f64;
        if c >= target {
            let frac = if c > prev_count {
                (target - prev_count) / (c - prev_count)
            } else {
                0.0
            };
            return prev_bound + frac * (b.upper_bound() - prev_bound);
        }
        prev_bound = b.upper_bound();
        prev_count = c;
    }
    prev_bound
}

/// Runs the bench `opts` describes on a mock cluster: the bare consumer, the daemon's pass
/// and the passes after it, as one JSON report (or the bare consumer's alone).
pub async fn bench(opts: BenchOptions) -> anyhow::Result<serde_json::Value> {
    let dir = std::env::temp_dir().join(format!("milstream-bench-{}", std::process::id()));
    let cfg = bench_config(&opts, &dir);
    // The bare consumer runs with the daemon's client properties: with librdkafka's default
    // fetch wait the mock cluster sometimes held its last fetch for 500 ms, and the bare
    // consumer measured 330k messages/s in one run and 2M in the next.
    let props = cfg.kafka.properties.clone();
    let topic = cfg.kafka.points_topic.clone();
    let bootstrap = start_mock_cluster(inputs::with_copies(&topic), opts.partitions)?;
    let data = bench_data(opts.channels)?;
    let model = if opts.channels == 1 {
        train_embedded_model()?
    } else {
        crate::mil::Model::fit(&data, &crate::mil::FitParams::default())?
    };
    let scoring = Arc::new(ScoringModel {
        model,
        version: "bench".into(),
        generation: 1,
    });
    let feed = Arc::new(Feed::new(&opts, data));
    let (n_msgs, n_points) = (feed.messages(), feed.points());
    let producer: BenchProducer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()?;
    if opts.rate.is_none() {
        produce_all(&producer, &bootstrap, &topic, &feed, opts.partitions)?;
    }
    if opts.baseline {
        return baseline(&bootstrap, &props, &topic, n_msgs, n_points, &opts);
    }
    // The bare consumer first, on the same pre-produced topic and in the same minute.
    let bare = match opts.rate {
        None => Some(baseline(
            &bootstrap, &props, &topic, n_msgs, n_points, &opts,
        )?),
        Some(_) => None,
    };
    // A paced run's feeder takes the producer; a throughput run's lives to the end.
    let mut producer = Some(producer);
    let first = first_pass(&opts, &cfg, &bootstrap, &scoring, &feed, &mut producer).await?;
    let more = more_passes(&opts, cfg, (&bootstrap, &topic, &feed), &scoring).await?;
    let _ = std::fs::remove_dir_all(&dir);
    // Paced: the topic holds the whole stream now; the bare consumer drains it after.
    let bare = match bare {
        Some(b) => b,
        None => baseline(&bootstrap, &props, &topic, n_msgs, n_points, &opts)?,
    };
    Ok(report(&opts, &feed, first, &bare, more))
}

/// The daemon's configuration for the bench: output under `dir` (or the object store
/// asked for), no HTTP, the points topic alone, on the mock broker.
fn bench_config(opts: &BenchOptions, dir: &std::path::Path) -> Config {
    let mut cfg = Config::default();
    cfg.output.dir = match &opts.output {
        Some(url) => std::path::PathBuf::from(url),
        None => dir.to_path_buf(),
    };
    cfg.object_store.0 = opts.store_options.clone();
    cfg.training.dir = dir.join("training");
    cfg.output.roll_age_ms = opts.roll_age_ms;
    cfg.output.roll_rows = 100_000;
    cfg.http.listen.clear();
    cfg.kafka.bags_topic.clear();
    cfg.kafka.labels_topic.clear();
    cfg.commit.interval_ms = 100;
    // A window every 150 points at any spacing, as at the demo's 100 Hz: the hop is event
    // time, and a 1 Hz sensor with the default 1.5 s hop would be scored at every other point.
    cfg.window.hop_ms =
        cfg.window.hop_ms * opts.spacing_ms / super::embedded::DEMO_POINT_SPACING_MS;
    super::embedded::for_mock_broker(&mut cfg.kafka);
    cfg
}

/// Throughput runs: every message on the topic before the daemon starts, checked against
/// what the mock cluster kept (it drops the oldest beyond its retention).
fn produce_all(
    producer: &BenchProducer,
    bootstrap: &str,
    topic: &str,
    feed: &Feed,
    partitions: i32,
) -> anyhow::Result<()> {
    let n_msgs = feed.messages();
    produce(producer, topic, feed, 0..n_msgs, true);
    let probe: rdkafka::consumer::BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()?;
    let mut stored = 0;
    for p in 0..partitions {
        let (lo, hi) = rdkafka::consumer::Consumer::fetch_watermarks(
            &probe,
            topic,
            p,
            Duration::from_secs(10),
        )?;
        stored += hi - lo;
    }
    tracing::info!(
        stored,
        produced = n_msgs,
        "messages on the topic before consuming"
    );
    if (stored as usize) < n_msgs {
        anyhow::bail!(
            "the mock cluster kept {stored} of {} messages (it retains about 100,000 \
             messages or 5 MB per partition): use more --partitions or fewer --points \
             (or --rate: a paced run produces while the daemon consumes)",
            n_msgs
        );
    }
    Ok(())
}

/// What the daemon's measured pass saw: its metrics, its times and the process's memory.
struct FirstPass {
    metrics: Arc<Metrics>,
    /// From the first record consumed to the last.
    secs: f64,
    /// From the daemon ready to its first record.
    startup: Duration,
    /// Series live when the last point was consumed.
    live_series: i64,
    rss_before: Option<u64>,
    rss_loaded: Option<u64>,
    /// Paced runs: how long the feeder waited for the daemon to catch up, in ms.
    feeder_waited_ms: u64,
}

/// The measured daemon pass: the pipeline on `cfg` consumes the whole stream (pre-produced,
/// or fed at the paced rate by `producer`, taken, meanwhile), then shuts down once durable.
async fn first_pass(
    opts: &BenchOptions,
    cfg: &Config,
    bootstrap: &str,
    scoring: &Arc<ScoringModel>,
    feed: &Arc<Feed>,
    producer: &mut Option<BenchProducer>,
) -> anyhow::Result<FirstPass> {
    let (n_msgs, n_points) = (feed.messages(), feed.points());
    let topic = &cfg.kafka.points_topic;
    let rss_before = rss_bytes();
    let metrics = Metrics::new();
    let health = Arc::new(Health::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // The series model alone: bench-stream measures points.
    let start = vec![(super::score::models::specs(cfg)[0].clone(), scoring.clone())];
    let pipeline = tokio::spawn(run_pipeline(
        cfg.clone(),
        bootstrap.to_string(),
        start,
        (metrics.clone(), health.clone(), None),
        stop_rx,
    ));
    while !health.is_ready() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let consumed = |m: &Metrics| m.records_consumed_total(topic) as usize;
    // The clock starts at the first record, as the baseline's does: group join and the
    // first fetch are start-up, not throughput.
    let ready_at = Instant::now();
    if opts.rate.is_none() {
        while consumed(&metrics) == 0 && ready_at.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    let start = Instant::now();
    let startup = start - ready_at;
    // The mock cluster keeps about 5 MB a partition: a feeder further ahead of the daemon
    // than that would have its oldest messages dropped unread. It waits at a quarter of it
    // over all partitions (a run where it waited did not hold its rate: the report says how
    // long it waited). Half was not enough at 100,000 series of 1,000-point messages: the
    // lag is counted over all partitions, a slow partition holds more than its share, and
    // 0.1-0.6 % of the messages were dropped near the end of such runs.
    let lag_cap = lag_cap(feed, opts, n_msgs);
    let feeder_waited = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let feeder = opts.rate.map(|rate| {
        Feeder {
            producer: producer.take().expect("the producer is the feeder's"),
            topic: topic.clone(),
            feed: feed.clone(),
            metrics: metrics.clone(),
            waited: feeder_waited.clone(),
            rate,
            batch: opts.batch,
            n_msgs,
            lag_cap,
        }
        .spawn()
    });
    wait_until_consumed(&metrics, topic, n_points, start).await?;
    let secs = start.elapsed().as_secs_f64();
    // Resident memory with every series live (the windows are dropped at shutdown).
    let rss_loaded = rss_bytes();
    let live_series = metrics.live_series.get();
    if let Some(f) = feeder {
        let _ = f.join();
    }
    // Let the last segments roll and become durable before reading the latency histogram.
    tokio::time::sleep(Duration::from_millis(opts.roll_age_ms * 2 + 500)).await;
    let _ = stop_tx.send(true);
    pipeline.await??;
    Ok(FirstPass {
        metrics,
        secs,
        startup,
        live_series,
        rss_before,
        rss_loaded,
        feeder_waited_ms: feeder_waited.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// The paced run's feeder: produces the stream at `rate` points/s on a thread of its own,
/// waiting while it is more than `lag_cap` points ahead of the daemon (`waited`, in ms).
struct Feeder {
    producer: BenchProducer,
    topic: String,
    feed: Arc<Feed>,
    metrics: Arc<Metrics>,
    waited: Arc<std::sync::atomic::AtomicU64>,
    rate: u64,
    batch: usize,
    n_msgs: usize,
    lag_cap: usize,
}

impl Feeder {
    /// Starts feeding; the thread ends once every message is produced and flushed.
    fn spawn(self) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || self.run())
    }

    /// Produces the messages in bursts, each due at its share of the rate.
    fn run(self) {
        let Self {
            producer,
            topic,
            feed,
            metrics: m,
            waited,
            rate,
            batch,
            n_msgs,
            lag_cap,
        } = self;
        let t0 = Instant::now();
        // About 1,000 points per burst, whatever the batch size: a coarser burst would
        // measure the feeder's queueing, not the daemon's.
        let per_chunk = (1000 / batch).max(1);
        let mut sent = 0;
        for (i, first) in (0..n_msgs).step_by(per_chunk).enumerate() {
            let hold = Instant::now();
            while (sent * batch).saturating_sub(m.records_consumed_total(&topic) as usize) > lag_cap
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            waited.fetch_add(
                hold.elapsed().as_millis() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            let last = (first + per_chunk).min(n_msgs);
            produce(&producer, &topic, &feed, first..last, false);
            sent = last;
            let due = Duration::from_secs_f64(((i + 1) * per_chunk * batch) as f64 / rate as f64);
            if let Some(w) = due.checked_sub(t0.elapsed()) {
                std::thread::sleep(w);
            }
        }
        let _ = producer.flush(Duration::from_secs(60));
    }
}

/// Waits until the daemon has consumed `n_points` points of `topic`, logging its progress
/// every 5 s; an error when none arrived for 60 s.
async fn wait_until_consumed(
    metrics: &Metrics,
    topic: &str,
    n_points: usize,
    start: Instant,
) -> anyhow::Result<()> {
    let consumed = |m: &Metrics| m.records_consumed_total(topic) as usize;
    let (mut last_report, mut last_count, mut last_change) = (start, 0, start);
    while consumed(metrics) < n_points {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let now = consumed(metrics);
        if now != last_count {
            (last_count, last_change) = (now, Instant::now());
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            last_report = Instant::now();
            tracing::info!(
                consumed = now,
                of = n_points,
                rss_mib = rss_bytes().unwrap_or(0) >> 20,
                live_series = metrics.live_series.get(),
                "bench progress"
            );
        }
        // No deadline on the whole run (a soak of hundreds of millions of points is
        // legitimate), only on progress.
        if last_change.elapsed() > Duration::from_secs(60) {
            anyhow::bail!(
                "bench: {now} of {n_points} points consumed and none in the last 60 s \
                 (did the mock cluster drop messages? it keeps about 5 MB a partition)"
            );
        }
    }
    Ok(())
}

/// The bench's JSON report: the daemon's first pass against the bare consumer's `bare`,
/// with the passes after it.
fn report(
    opts: &BenchOptions,
    feed: &Feed,
    first: FirstPass,
    bare: &serde_json::Value,
    more: MorePasses,
) -> serde_json::Value {
    let (n_msgs, n_points) = (feed.messages(), feed.points());
    let FirstPass {
        metrics,
        secs,
        startup,
        live_series,
        rss_before,
        rss_loaded,
        feeder_waited_ms,
    } = first;
    let MorePasses {
        with_view,
        without_drift,
        formats,
        inputs,
    } = more;
    let bare_pps = bare["points_per_second"].as_f64().unwrap_or(f64::NAN);
    let pps = n_points as f64 / secs;
    let h = &metrics.consume_to_durable_seconds;
    json!({
        "points": n_points,
        "messages": n_msgs,
        "points_per_message": opts.batch,
        "partitions": opts.partitions,
        "series": opts.series,
        "mode": if opts.rate.is_some() { "paced" } else { "throughput" },
        "rate_points_per_second": opts.rate,
        "seconds": secs,
        "startup_seconds": startup.as_secs_f64(),
        "points_per_second": pps,
        "baseline_points_per_second": bare_pps,
        "baseline_seconds": bare["seconds"],
        // The guard's figure: the daemon against the bare consumer of the same run (paced
        // runs are limited by the rate, so theirs says little).
        "ratio_to_baseline": pps / bare_pps,
        "live_series": live_series,
        "rss_bytes_before": rss_before,
        "rss_bytes_loaded": rss_loaded,
        // The whole process's peak: the daemon with the mock cluster's log (at most about
        // 5 MB a partition), the feeder and, in throughput runs, the pre-produced topic.
        "rss_bytes_peak": status_bytes("VmHWM:"),
        "points_per_series": n_points / opts.series.max(1),
        // Resident memory per live series: the growth over the run, all of which is not
        // windows (segments, queues), so an upper bound.
        "rss_bytes_per_live_series": match (rss_before, rss_loaded) {
            (Some(a), Some(b)) if live_series > 0 => json!((b.saturating_sub(a)) as f64 / live_series as f64),
            _ => serde_json::Value::Null,
        },
        "channels": opts.channels,
        "channel_values_per_second": (n_points * opts.channels) as f64 / secs,
        "windows_scored": metrics.windows_scored.get(),
        "predictions_written": metrics.predictions_written.get(),
        "consume_to_durable_p50_seconds": quantile(h, 0.5),
        "consume_to_durable_p99_seconds": quantile(h, 0.99),
        "roll_age_ms": opts.roll_age_ms,
        "spacing_ms": opts.spacing_ms,
        "feeder_waited_seconds": opts.rate.map(|_| feeder_waited_ms as f64 / 1e3),
        "output": opts.output.as_deref().unwrap_or("local"),
        "points_per_second_without_drift": without_drift.map(|s| n_points as f64 / s),
        "drift_cost": without_drift.map(|s| 1.0 - s / secs),
        "view": with_view,
        "output_formats": formats,
        "input_formats": inputs,
    })
}

/// How far the paced feeder may run ahead of the daemon, in points: a quarter of what the
/// mock cluster keeps over all partitions (see `first_pass`).
fn lag_cap(feed: &Feed, opts: &BenchOptions, n_msgs: usize) -> usize {
    let msg_bytes = feed
        .message(0)
        .1
        .len()
        .max(feed.message(n_msgs.saturating_sub(1)).1.len())
        .max(1);
    let per_partition = (5usize << 20) / msg_bytes;
    (opts.partitions.max(1) as usize * per_partition.min(100_000) * opts.batch / 4).max(1)
}

/// The passes after the first, as the report gives them.
struct MorePasses {
    /// The live view's cost (`view_clients`).
    with_view: Option<serde_json::Value>,
    /// Seconds of the pass with `[drift]` off (`compare_drift`).
    without_drift: Option<f64>,
    /// Parquet against Delta (`compare_delta`).
    formats: Option<serde_json::Value>,
    /// JSON against Avro or Protobuf (`compare_input`).
    inputs: Option<serde_json::Value>,
}

/// The passes after the first over the same topic, in the same run (throughput runs): the
/// live view's cost (`view_clients`) and the same stream with `[drift]` off (the
/// detectors' cost, `compare_drift`), as the view's report and the seconds without drift;
/// then the output formats (`compare_delta`) and the input formats (`compare_input`).
async fn more_passes(
    opts: &BenchOptions,
    cfg: Config,
    (bootstrap, topic, feed): (&str, &str, &Feed),
    scoring: &Arc<ScoringModel>,
) -> anyhow::Result<MorePasses> {
    let n_points = feed.points();
    let with_view = match (opts.view_clients, opts.rate) {
        (Some(n), None) => Some(view_cost(&cfg, bootstrap, scoring, topic, n_points, n).await?),
        _ => None,
    };
    let formats = compare_formats(opts, &cfg, bootstrap, scoring, n_points).await?;
    let inputs = inputs::compare_inputs(opts, &cfg, (bootstrap, feed), scoring, n_points).await?;
    let without_drift = match (opts.compare_drift, opts.rate) {
        (true, None) => {
            let mut c = cfg;
            c.drift.evaluate = false;
            c.kafka.group_id.push_str(".without-drift");
            c.output.dir = c.output.dir.join("without-drift");
            let pass = timed_pass(c, bootstrap, scoring.clone(), topic, n_points, None);
            Some(pass.await?.0)
        }
        _ => None,
    };
    Ok(MorePasses {
        with_view,
        without_drift,
        formats,
        inputs,
    })
}

/// One more daemon pass over the pre-produced topic (its own consumer group): seconds from
/// its first record to its last, and with `pages` (Some(n): the live view on, n pages
/// reading its event stream) the bytes those pages read.
async fn timed_pass(
    cfg: Config,
    bootstrap: &str,
    scoring: Arc<ScoringModel>,
    topic: &str,
    n_points: usize,
    pages: Option<usize>,
) -> anyhow::Result<(f64, u64)> {
    let metrics = Metrics::new();
    let health = Arc::new(Health::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let start = vec![(super::score::models::specs(&cfg)[0].clone(), scoring)];
    let (feed, readers) = match pages {
        Some(n) => {
            let (feed, readers) = open_pages(&cfg, &metrics, &health, &stop_rx, n).await?;
            (Some(feed), Some(readers))
        }
        None => (None, None),
    };
    let boot = bootstrap.to_string();
    let m = (metrics.clone(), health.clone(), feed);
    let pipeline = tokio::spawn(run_pipeline(cfg, boot, start, m, stop_rx));
    let consumed = |m: &Metrics| m.records_consumed_total(topic) as usize;
    let ready_at = Instant::now();
    while consumed(&metrics) == 0 && ready_at.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let start = Instant::now();
    while consumed(&metrics) < n_points {
        tokio::time::sleep(Duration::from_millis(2)).await;
        if start.elapsed() > Duration::from_secs(600) {
            anyhow::bail!("bench: a timed pass stalled");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let read = readers.map_or(0, |r| r.bytes.load(std::sync::atomic::Ordering::Relaxed));
    let _ = stop_tx.send(true);
    pipeline.await??;
    Ok((secs, read))
}

/// The live view of a bench pass, served on a free port, and `n` pages reading it (each
/// watching one of the bench's series).
async fn open_pages(
    cfg: &Config,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    stop: &tokio::sync::watch::Receiver<bool>,
    n: usize,
) -> anyhow::Result<(Arc<super::view::feed::ViewFeed>, super::view::load::Readers)> {
    let hub = super::view::ViewHub::start(&cfg.view, metrics.clone(), health.clone(), stop.clone());
    let routes = super::view::routes::router(hub.clone());
    let mut rx = stop.clone();
    let shutdown = async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let (addr, _) = crate::http::serve_with(
        "127.0.0.1:0",
        metrics.clone(),
        health.clone(),
        routes,
        shutdown,
    )
    .await?;
    let series: Vec<String> = (0..n).map(|i| format!("bench-{i}")).collect();
    Ok((hub.feed.clone(), super::view::load::open(addr, n, &series)))
}

/// The live view's cost: passes over the same topic in turn with the view off, on with no
/// page open and on with `pages` pages open (three times each, in one run, in mirrored
/// order), as points/s.
async fn view_cost(
    cfg: &Config,
    bootstrap: &str,
    scoring: &Arc<ScoringModel>,
    topic: &str,
    n_points: usize,
    pages: usize,
) -> anyhow::Result<serde_json::Value> {
    let (mut pps, mut read) = ([Vec::new(), Vec::new(), Vec::new()], 0);
    // Off, none, open, open, none, off, off, none, open: a drift of the machine's speed
    // over the run weighs on each about the same.
    for (round, which) in [0, 1, 2, 2, 1, 0, 0, 1, 2].into_iter().enumerate() {
        let open = [None, Some(0), Some(pages)][which];
        let mut c = cfg.clone();
        c.kafka.group_id.push_str(&format!(".view-{round}"));
        c.output.dir = c.output.dir.join(format!("view-{round}"));
        let (secs, bytes) =
            timed_pass(c, bootstrap, scoring.clone(), topic, n_points, open).await?;
        pps[which].push(n_points as f64 / secs);
        read += bytes;
    }
    // The median and the best of each: another load on the machine only slows a pass, so
    // the best is the least disturbed.
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let [off, none, open] = pps;
    Ok(json!({
        "pages": pages,
        "points_per_second_view_off": off,
        "points_per_second_no_page": none,
        "points_per_second_pages_open": open,
        "bytes_read_by_pages": read,
        // The cost of the pages: with them against the view on without them.
        "cost_median": 1.0 - median(&open) / median(&none),
        "cost_best": 1.0 - best(&open) / best(&none),
        "cost_of_the_view_median": 1.0 - median(&none) / median(&off),
        "cost_of_the_view_best": 1.0 - best(&none) / best(&off),
    }))
}

/// Two more daemon passes over the pre-produced topic at `base`'s settings (`[drift]` off),
/// the first writing Parquet files, the second Delta tables: each one's points/s, data
/// files and files per minute (of its pass), and Delta's throughput as a ratio to Parquet's.
/// None unless asked for (`compare_delta`) in a throughput run.
async fn compare_formats(
    opts: &BenchOptions,
    base: &Config,
    bootstrap: &str,
    scoring: &Arc<ScoringModel>,
    n_points: usize,
) -> anyhow::Result<Option<serde_json::Value>> {
    if !opts.compare_delta || opts.rate.is_some() {
        return Ok(None);
    }
    let topic = &base.kafka.points_topic;
    let mut report = serde_json::Map::new();
    let mut pps = Vec::new();
    for format in ["parquet", "delta"] {
        let mut c = base.clone();
        c.drift.evaluate = false;
        c.kafka.group_id = format!("{}.{format}", base.kafka.group_id);
        c.output.dir = base.output.dir.join(format);
        c.output.format = format.into();
        let dir = c.output.dir.clone();
        let (secs, _) = timed_pass(c, bootstrap, scoring.clone(), topic, n_points, None).await?;
        let files = count_files(&dir, ".parquet");
        let commits = count_files(&dir.join("predictions/_delta_log"), ".json");
        pps.push(n_points as f64 / secs);
        report.insert(
            format.into(),
            json!({"points_per_second": n_points as f64 / secs, "seconds": secs,
                   "data_files": files, "files_per_minute": files as f64 * 60.0 / secs,
                   "log_commits": commits}),
        );
    }
    report.insert("delta_to_parquet".into(), json!(pps[1] / pps[0]));
    Ok(Some(serde_json::Value::Object(report)))
}

/// Files under `dir` (any depth) whose names end in `suffix`; hidden ones not counted.
fn count_files(dir: &std::path::Path, suffix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let (p, name) = (e.path(), e.file_name().to_string_lossy().into_owned());
            match p.is_dir() {
                true => count_files(&p, suffix),
                false => usize::from(name.ends_with(suffix) && !name.starts_with('.')),
            }
        })
        .sum()
}

/// The process's resident memory now (Linux), in bytes.
fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A `/proc/self/status` size line (VmRSS: now; VmHWM: the peak), in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// One line for a person: the daemon, the bare consumer and their ratio side by side.
pub fn summary_line(r: &serde_json::Value) -> String {
    let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    if r["mode"] == "baseline" {
        return format!(
            "bare consumer {:.0} points/s ({:.0} messages/s)",
            f("points_per_second"),
            f("messages_per_second")
        );
    }
    format!(
        "daemon {:.0} points/s | bare consumer {:.0} points/s | ratio {:.4} | p50 {:.3} s p99 {:.3} s consume-to-durable | {} points, {}/message, {} partitions, {} series{}",
        f("points_per_second"),
        f("baseline_points_per_second"),
        f("ratio_to_baseline"),
        f("consume_to_durable_p50_seconds"),
        f("consume_to_durable_p99_seconds"),
        r["points"],
        r["points_per_message"],
        r["partitions"],
        r["series"],
        match r["rate_points_per_second"].as_u64() {
            Some(rate) => format!(", paced at {rate} points/s"),
            None => String::new(),
        }
    ) + &match r["points_per_second_without_drift"].as_f64() {
        Some(w) => format!(
            " | without [drift] {w:.0} points/s (drift costs {:.1} %)",
            100.0 * f("drift_cost")
        ),
        None => String::new(),
    }
}

/// Drains the pre-produced topic with a bare `BaseConsumer` (assign, no group, no decoding):
/// the rate the mock cluster and librdkafka deliver on their own.
fn baseline(
    bootstrap: &str,
    props: &std::collections::BTreeMap<String, String>,
    topic: &str,
    n_msgs: usize,
    n_points: usize,
    opts: &BenchOptions,
) -> anyhow::Result<serde_json::Value> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Message, Offset, TopicPartitionList};
    let mut client = ClientConfig::new();
    for (k, v) in props {
        client.set(k, v);
    }
    let c: BaseConsumer = client
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "milstream-bench-baseline")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..opts.partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)?;
    }
    c.assign(&tpl)?;
    // What the topic holds now: after a paced run the mock cluster may have dropped its
    // oldest messages (it keeps about 100k messages or 5 MB per partition).
    let mut stored = 0usize;
    for p in 0..opts.partitions {
        let (lo, hi) = c.fetch_watermarks(topic, p, Duration::from_secs(10))?;
        stored += usize::try_from(hi - lo).unwrap_or(0);
    }
    let n_points = n_points * stored.min(n_msgs) / n_msgs.max(1);
    let n_msgs = stored.min(n_msgs);
    let (mut got, mut bytes) = (0usize, 0usize);
    let mut start = None;
    let mut last_progress = Instant::now();
    while got < n_msgs {
        if let Some(m) = c.poll(Duration::from_millis(100)) {
            let m = m?;
            start.get_or_insert_with(Instant::now);
            bytes += m.payload().map_or(0, <[u8]>::len);
            got += 1;
            last_progress = Instant::now();
        } else if last_progress.elapsed() > Duration::from_secs(60) {
            anyhow::bail!("bare consumer: {got} of {n_msgs} messages, none for 60 s");
        }
    }
    let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    Ok(json!({
        "mode": "baseline",
        "messages": n_msgs,
        "points": n_points,
        "payload_bytes": bytes,
        "partitions": opts.partitions,
        "seconds": secs,
        "messages_per_second": n_msgs as f64 / secs,
        "points_per_second": n_points as f64 / secs,
    }))
}
