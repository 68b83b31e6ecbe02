//! The offline and daemon subcommands, one module each; `main.rs` parses and dispatches.
//! Here: what several subcommands share (reading data and models, fitting with
//! `FitOptions`, scoring, progress bars, the JSON summary).

pub mod bench;
pub mod bench_stream;
pub mod cv;
pub mod demo_feed;
pub mod eval;
pub mod explain;
pub mod inspect;
pub mod predict;
pub mod run;
pub mod train;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use milstream::data::{read_dataset, Format};
use milstream::mil::select::{accuracy, auc};
use milstream::mil::{Dataset, Model};

pub use milstream::fit_options::{fit, progress, FitOptions};

/// A saved model and the data to run it on (predict, explain).
#[derive(Args)]
pub struct ModelOnData {
    #[arg(long)]
    model: PathBuf,
    #[arg(long)]
    data: PathBuf,
    #[arg(long, value_enum)]
    format: Option<Format>,
}

impl ModelOnData {
    /// The model and the dataset, read.
    pub fn load(&self) -> Result<(Model, Dataset)> {
        Ok((load_model(&self.model)?, load(&self.data, self.format)?))
    }
}

/// A data file, or the daemon's training store when `path` is a folder (its Parquet
/// examples, one per segment or bag, the newest label of each).
pub fn load(path: &Path, format: Option<Format>) -> Result<Dataset> {
    if path.is_dir() {
        let examples = milstream::stream::lifecycle::training::load_store(path, usize::MAX, None)
            .with_context(|| format!("reading the training store {}", path.display()))?;
        anyhow::ensure!(
            !examples.is_empty(),
            "{}: no training examples (expected date=YYYY-MM-DD/*.parquet from the daemon's training.dir)",
            path.display()
        );
        return Ok(milstream::stream::lifecycle::training::to_dataset(
            &examples,
        ));
    }
    Ok(read_dataset(path, format)?)
}

pub fn load_model(path: &Path) -> Result<Model> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading model {}", path.display()))?;
    Model::from_json(&text).with_context(|| format!("loading model {}", path.display()))
}

/// Accuracy and (for two classes) AUC of `model` on `test`, with the time taken.
pub fn score(model: &Model, test: &Dataset, quiet: bool) -> Result<(f64, Option<f64>, f64)> {
    let pb = progress(test.len() as u64, "predicting", quiet);
    let t = Instant::now();
    let mut labels = Vec::with_capacity(test.len());
    let mut scores = Vec::with_capacity(test.len());
    for (i, s) in test.samples.iter().enumerate() {
        let p = model
            .predict(s)
            .with_context(|| format!("predicting {}", test.ids[i]))?;
        scores.push(p.scores.clone());
        labels.push(p.label);
        pb.inc(1);
    }
    let secs = t.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let classes = model.classes();
    let roc = if classes.len() == 2 {
        let pos: Vec<bool> = test.labels.iter().map(|l| *l == classes[1]).collect();
        auc(
            &scores.iter().map(|s| s[1] - s[0]).collect::<Vec<_>>(),
            &pos,
        )
    } else {
        None
    };
    Ok((accuracy(&labels, &test.labels), roc, secs))
}

pub fn summary_json(model: &Model) -> serde_json::Value {
    let summary = model.summary();
    let mut out = json!({
        "kind": model.kind_name(),
        "classes": model.classes(),
        "rounds": summary.rounds,
        "rho": summary.rho,
        "sparsity": summary.sparsity,
        "converged": summary.converged,
    });
    if let Model::LpboostShapelet(m) = model {
        out["lengths"] = json!(m.spaces.iter().map(|s| s.length).collect::<Vec<_>>());
        out["kernels"] = json!(m.spaces.iter().map(|s| s.kernel).collect::<Vec<_>>());
        out["nu"] = json!(m.params.nu);
        out["hypotheses"] = json!(m
            .ensembles
            .iter()
            .map(|e| e.hypotheses.len())
            .sum::<usize>());
        out["lp_solves"] = json!(m.summary.lp_solves);
        out["max_generated_rows"] = json!(m.summary.max_generated_rows);
    }
    out
}

/// This process's peak resident memory (VmHWM), where /proc tells it. Not getrusage's
/// maxrss, which counts a forking parent's image in a child that has not exec'd yet.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
