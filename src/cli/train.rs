//! `milstream train`: fit a model on a dataset (or the daemon's training store) and write
//! the JSON artifact.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::{fit, load, summary_json, FitOptions};

#[derive(Args)]
pub struct TrainArgs {
    #[arg(long)]
    data: PathBuf,
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    opts: FitOptions,
}

pub fn run(args: TrainArgs) -> Result<()> {
    let TrainArgs { data, out, opts } = args;
    let train = load(&data, opts.format)?;
    let (mut model, _, secs) = fit(&train, &[], &opts)?;
    milstream::mil::findings::record_shown_shares(&mut model, &train);
    std::fs::write(&out, model.to_json()).with_context(|| format!("writing {}", out.display()))?;
    let mut s = summary_json(&model);
    s["train_seconds"] = json!(secs);
    s["n_train"] = json!(train.len());
    s["model"] = json!(out.display().to_string());
    if opts.json {
        println!("{s}");
    } else {
        println!(
            "wrote {} ({} examples, {:.2} s): {s}",
            out.display(),
            train.len(),
            secs
        );
    }
    Ok(())
}
