//! `milstream eval`: fit on a training file, score a test file.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::{fit, load, peak_rss_bytes, score, summary_json, FitOptions};

#[derive(Args)]
pub struct EvalArgs {
    #[arg(long)]
    train: PathBuf,
    #[arg(long)]
    test: PathBuf,
    #[command(flatten)]
    opts: FitOptions,
}

pub fn run(args: EvalArgs) -> Result<()> {
    let EvalArgs { train, test, opts } = args;
    let tr = load(&train, opts.format)?;
    let te = load(&test, opts.format)?;
    let (model, _, train_secs) = fit(&tr, &te.samples, &opts)?;
    let (acc, roc, pred_secs) = score(&model, &te, opts.quiet)?;
    let mut s = summary_json(&model);
    s["accuracy"] = json!(acc);
    s["auc"] = json!(roc);
    s["train_seconds"] = json!(train_secs);
    s["predict_seconds"] = json!(pred_secs);
    s["n_train"] = json!(tr.len());
    s["n_test"] = json!(te.len());
    // The whole process's: reading both files, the fit, and scoring the test set.
    s["peak_rss_bytes"] = json!(peak_rss_bytes());
    if opts.json {
        println!("{s}");
    } else {
        println!(
            "accuracy {acc:.4}{}  train {train_secs:.2} s  predict {pred_secs:.2} s  ({} train, {} test)",
            roc.map(|a| format!("  auc {a:.4}")).unwrap_or_default(),
            tr.len(),
            te.len()
        );
    }
    Ok(())
}
