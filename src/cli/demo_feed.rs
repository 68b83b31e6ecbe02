//! `milstream demo-feed`: the embedded default's demo feed on its own, into any cluster.

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct DemoFeedArgs {
    #[arg(long)]
    bootstrap: String,
    #[arg(long, default_value = "milstream.points")]
    points_topic: String,
    /// "" = no bag records.
    #[arg(long, default_value = "milstream.bags")]
    bags_topic: String,
    /// "" = no labels.
    #[arg(long, default_value = "milstream.labels")]
    labels_topic: String,
    #[arg(long, default_value_t = 8)]
    sensors: usize,
    /// Points per second over all sensors.
    #[arg(long, default_value_t = 400)]
    points_per_second: u64,
    /// gunpoint (one channel) or basicmotions (six channels, `values`).
    #[arg(long, default_value = "gunpoint", value_parser = ["gunpoint", "basicmotions"])]
    dataset: String,
}

/// Produces until Ctrl-C.
pub fn run(args: DemoFeedArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            let _ = tx.send(true);
        });
        milstream::stream::embedded::demo_feed(
            args.bootstrap,
            milstream::stream::embedded::DemoTopics {
                points: args.points_topic,
                bags: args.bags_topic,
                labels: args.labels_topic,
            },
            if args.dataset == "basicmotions" {
                milstream::config::DemoDataset::Basicmotions
            } else {
                milstream::config::DemoDataset::Gunpoint
            },
            args.sensors,
            args.points_per_second,
            None,
            rx,
        )
        .await;
    });
    Ok(())
}
