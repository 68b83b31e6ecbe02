//! `milstream bench-stream`: the daemon end to end on the in-process mock cluster.

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct BenchStreamArgs {
    #[arg(long, default_value_t = 1_000_000)]
    points: usize,
    /// Points per Kafka message (1 = one record per message, 1000 = JSON arrays).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[arg(long, default_value_t = 64)]
    series: usize,
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    /// Produce at this many points/s while consuming and report latency.
    #[arg(long)]
    rate: Option<u64>,
    /// output.roll_age_ms for the run (bounds how long a row waits for its file).
    #[arg(long, default_value_t = 100)]
    roll_age_ms: u64,
    /// Drain the topic with a bare consumer instead of the daemon: what the mock cluster
    /// and librdkafka deliver before any decoding, scoring or writing.
    #[arg(long)]
    baseline: bool,
    /// Write the output to this object-store URL (`s3://bucket/prefix`) instead of a temp
    /// folder; credentials and endpoint from AWS_* variables or --store-option.
    #[arg(long)]
    output: Option<String>,
    /// An `[object_store]` option KEY=VALUE (repeatable), e.g. aws_endpoint=http://127.0.0.1:9000.
    #[arg(long = "store-option", value_name = "KEY=VALUE")]
    store_option: Vec<String>,
    /// 1: GunPoint points; 6: BasicMotions' six-channel points (`values`) and a model
    /// trained on them (throughput also in channel values per second).
    #[arg(long, default_value_t = 1)]
    channels: usize,
    /// Print only the report's JSON line (stdout), not the one-line summary (stderr).
    #[arg(long)]
    json: bool,
    /// Also run the daemon with `[drift]` off over the same stream in the same run and
    /// report both (throughput runs).
    #[arg(long)]
    compare_drift: bool,
    /// Also run the daemon over the same stream in turn with the live view off, on with no
    /// page open and on with this many pages reading its event stream (throughput runs):
    /// the view's cost, and that of its pages.
    #[arg(long)]
    view_clients: Option<usize>,
    /// Also run the daemon twice more over the same stream (`[drift]` off), writing Parquet
    /// files, then Delta tables (`output.format = "delta"`), and report both (throughput runs).
    #[arg(long)]
    compare_delta: bool,
    /// `avro` or `protobuf`: also measure that input beside JSON in the same run (throughput
    /// runs): the JSON, Avro and Protobuf decoders alone over the same messages, then a daemon
    /// pass over JSON and one over the format.
    #[arg(long, default_value = "json", value_parser = ["json", "avro", "protobuf"])]
    format: String,
    /// Event time between a series' points, in ms (10: the demo's 100 Hz; 1000: a 1 Hz
    /// sensor). The label-join history keeps `training.history_ms` of it (an hour).
    #[arg(long, default_value_t = milstream::stream::embedded::DEMO_POINT_SPACING_MS)]
    spacing_ms: i64,
}

/// Prints the benchmark's report: one line (daemon, bare consumer, ratio) on stderr and the
/// whole report as JSON on stdout.
pub fn run(args: BenchStreamArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut store_options = std::collections::BTreeMap::new();
    for kv in &args.store_option {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--store-option {kv:?}: expected KEY=VALUE"))?;
        store_options.insert(k.to_string(), v.to_string());
    }
    let json = args.json;
    let opts = milstream::stream::bench::BenchOptions {
        points: args.points,
        batch: args.batch.max(1),
        series: args.series,
        partitions: args.partitions,
        rate: args.rate,
        roll_age_ms: args.roll_age_ms,
        baseline: args.baseline,
        output: args.output,
        store_options,
        channels: args.channels,
        compare_drift: args.compare_drift,
        view_clients: args.view_clients,
        compare_delta: args.compare_delta,
        compare_input: match args.format.as_str() {
            "avro" => Some(milstream::config::InputFormat::Avro),
            "protobuf" => Some(milstream::config::InputFormat::Protobuf),
            _ => None,
        },
        spacing_ms: args.spacing_ms.max(1),
    };
    let report = rt.block_on(milstream::stream::bench::bench(opts))?;
    // The report as one JSON line on stdout (scripts and the workplace's user-path check read
    // the last line); the human line goes to stderr, unless --json asks for the JSON alone.
    if !json {
        eprintln!("{}", milstream::stream::bench::summary_line(&report));
    }
    println!("{report}");
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}
