//! The `milstream` command line: parses the arguments, sets up logging, and dispatches to
//! one module per subcommand under `src/cli/`.

mod cli;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "milstream",
    version,
    about = "Streaming multiple-instance learning: LPBoost over kernelized shapelets"
)]
struct Cli {
    /// Log lines on stderr: human-readable text, or one JSON object per line for a log
    /// pipeline (fields: timestamp, level, target, message and the event's fields, such as
    /// topic, partition, offset).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: Kafka -> windows -> scoring -> Parquet. With no --config it needs no
    /// external service: an in-process Kafka (librdkafka's mock cluster), a model trained
    /// from the bundled GunPoint data, and a demo feed of live sensor series.
    Run(cli::run::RunArgs),
    /// Fit a model on a dataset and write the JSON artifact.
    Train(cli::train::TrainArgs),
    /// Score every bag of a dataset with a saved model (one line per bag).
    Predict(cli::predict::PredictArgs),
    /// Like predict, with each hypothesis's maximising instance and contribution w_j h_j(B).
    Explain(cli::explain::ExplainArgs),
    /// The model card: kind, classes, lengths, kernels, rounds, margin, sparsity, training.
    Inspect(cli::inspect::InspectArgs),
    /// Replay GunPoint test series as live sensors (points and labels) into any Kafka
    /// cluster, the embedded default's demo feed on its own (e.g. for docker compose).
    DemoFeed(cli::demo_feed::DemoFeedArgs),
    /// End-to-end daemon benchmark on the in-process mock cluster with the embedded model:
    /// points/s (pre-produced) or consume-to-durable latency (with --rate). Prints JSON.
    BenchStream(cli::bench_stream::BenchStreamArgs),
    /// Fit on a training file, score a test file.
    Eval(cli::eval::EvalArgs),
    /// k-fold cross-validated accuracy on one file; with --models, one row per model kind.
    Cv(cli::cv::CvArgs),
    /// Time one fit, and the full cross-validated grid search, on a training file; or,
    /// with --scaling, fit seconds and peak memory on n = 100, 200, 400, ..., 3,200 and
    /// 5,000 seeded cylinder-bell-funnel series of 150 points (one child process per n).
    Bench(cli::bench::BenchArgs),
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run(args) => cli::run::run(args, cli.log_format == LogFormat::Json),
        Command::Train(args) => cli::train::run(args),
        Command::Predict(args) => cli::predict::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Inspect(args) => cli::inspect::run(args),
        Command::DemoFeed(args) => cli::demo_feed::run(args),
        Command::BenchStream(args) => cli::bench_stream::run(args),
        Command::Eval(args) => cli::eval::run(args),
        Command::Cv(args) => cli::cv::run(args),
        Command::Bench(args) => cli::bench::run(args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The commands that print results end quietly when their reader goes away
    // (`milstream predict ... | head`), as Unix filters do. The daemon and the network
    // commands keep Rust's ignored SIGPIPE, so a closed socket is an error, not an exit.
    if !matches!(
        cli.command,
        Command::Run(_) | Command::DemoFeed(_) | Command::BenchStream(_)
    ) {
        // SAFETY: called before any thread starts; SIG_DFL is a valid disposition.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
