//! `milstream run`: the daemon (Kafka -> windows -> scoring -> Parquet), on the embedded
//! default or a config file.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct RunArgs {
    /// TOML configuration (see deploy/milstream.example.toml); unset = the embedded default.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Embedded mode: start the mock cluster but no demo producer (produce with any Kafka
    /// client to the printed bootstrap address).
    #[arg(long)]
    no_demo_feed: bool,
}

/// Runs the daemon until SIGTERM / SIGINT; `json_logs` makes the start-up banner a log event.
pub fn run(args: RunArgs, json_logs: bool) -> Result<()> {
    let cfg = match &args.config {
        Some(p) => milstream::config::Config::load(p)?,
        None => milstream::config::Config::default(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    rt.block_on(milstream::stream::run(
        cfg,
        milstream::stream::RunOptions {
            no_demo_feed: args.no_demo_feed,
            json_logs,
        },
        stop_rx,
    ))?;
    // librdkafka threads can outlive the runtime; the process is done.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}
