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
    check_labels(&tr.classes(), &te.labels, &train, &test)?;
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

/// Test labels are compared with the training classes as text: none in common is two files
/// that write their labels differently (`1.0` and `1`), an error before the fit; a few
/// classes the training set lacks are counted wrong, with a warning naming them.
fn check_labels(
    classes: &[String],
    labels: &[String],
    train: &std::path::Path,
    test: &std::path::Path,
) -> Result<()> {
    let mut unknown: Vec<&String> = labels.iter().filter(|l| !classes.contains(l)).collect();
    unknown.sort();
    unknown.dedup();
    anyhow::ensure!(
        unknown.len()
            < labels
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
        "no label of {} is a class of {} ({} against {}): labels are compared as text",
        test.display(),
        train.display(),
        shown(&unknown),
        shown(&classes.iter().collect::<Vec<_>>())
    );
    if !unknown.is_empty() {
        eprintln!(
            "warning: test labels {} are not classes of {}; their series count as wrong",
            shown(&unknown),
            train.display()
        );
    }
    Ok(())
}

/// At most five labels, quoted.
fn shown(labels: &[&String]) -> String {
    let mut s: Vec<String> = labels.iter().take(5).map(|l| format!("{l:?}")).collect();
    if labels.len() > 5 {
        s.push(format!("... ({} in all)", labels.len()));
    }
    s.join(", ")
}
