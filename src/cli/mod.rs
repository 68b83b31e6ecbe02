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
pub mod options;
pub mod predict;
pub mod run;
pub mod train;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use milstream::data::{read_dataset, Format};
use milstream::mil::select::{
    accuracy, auc, best_index, cross_validate_grid_until, default_grid, CvEstimate,
};
use milstream::mil::{Dataset, FitParams, Model};

pub use options::FitOptions;

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

pub fn progress(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(
            "{msg:>12} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta}",
        )
        .expect("static progress template is valid")
        .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

pub fn spinner(what: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_message(what.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

/// A data file, or the daemon's training store when `path` is a folder (its Parquet
/// examples, one per segment or bag, the newest label of each).
pub fn load(path: &Path, format: Option<Format>) -> Result<Dataset> {
    if path.is_dir() {
        let examples = milstream::stream::training::load_store(path, usize::MAX, None)
            .with_context(|| format!("reading the training store {}", path.display()))?;
        anyhow::ensure!(
            !examples.is_empty(),
            "{}: no training examples (expected date=YYYY-MM-DD/*.parquet from the daemon's training.dir)",
            path.display()
        );
        return Ok(milstream::stream::training::to_dataset(&examples));
    }
    Ok(read_dataset(path, format)?)
}

pub fn load_model(path: &Path) -> Result<Model> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading model {}", path.display()))?;
    Model::from_json(&text).with_context(|| format!("loading model {}", path.display()))
}

/// The default --search budget, in fits of the defaults on the training data.
const SEARCH_BUDGET_FITS: f64 = 20.0;

/// Fits with `opts`, running the inner grid search first when asked.
/// `unlabeled`: samples the fit may see without labels (only the transductive box kernel
/// uses them: eval passes its test file).
pub fn fit(
    train: &Dataset,
    unlabeled: &[milstream::mil::Sample],
    opts: &FitOptions,
) -> Result<(Model, FitParams, f64)> {
    let mut params = opts.params(train)?;
    if opts.search {
        let input = train.check_trainable()?;
        let grid = default_grid(&params, input);
        let folds = 5.min(train.len());
        let budget = match opts.search_budget {
            Some(b) if b > 0.0 && b.is_finite() => b,
            Some(b) => bail!("--search-budget must be a positive number of seconds, got {b}"),
            None => {
                let pb = spinner("timing one fit for the search budget", opts.quiet);
                let t = Instant::now();
                Model::fit(train, &params)?;
                pb.finish_and_clear();
                SEARCH_BUDGET_FITS * t.elapsed().as_secs_f64()
            }
        };
        let start = Instant::now();
        let deadline = start + std::time::Duration::from_secs_f64(budget);
        let pb = progress((grid.len() * folds) as u64, "search", opts.quiet);
        let est =
            cross_validate_grid_until(train, &grid, folds, opts.seed, Some(deadline), &|| {
                pb.inc(1)
            })?;
        pb.finish_and_clear();
        let tried: Vec<(usize, CvEstimate)> = est
            .into_iter()
            .enumerate()
            .filter_map(|(g, e)| e.map(|e| (g, e)))
            .collect();
        for (g, e) in &tried {
            let p = &grid[*g];
            eprintln!(
                "search: tried lengths {:?}, nu {}, kernel {:?}{}: CV accuracy {:.4}",
                p.lengths
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
                p.nu,
                p.kernel,
                if p.kind == milstream::mil::model::ModelKind::Lpboost {
                    String::new()
                } else {
                    format!(" ({})", p.kind.name())
                },
                e.mean
            );
        }
        let ests: Vec<CvEstimate> = tried.iter().map(|(_, e)| e.clone()).collect();
        let (best_g, best_e) = &tried[best_index(&ests)];
        params = grid[*best_g].clone();
        eprintln!(
            "search: tried {} of {} grid points in {:.1} s (budget {:.1} s); best: lengths {:?}, nu {}, kernel {:?} (inner CV accuracy {:.4})",
            tried.len(),
            grid.len(),
            start.elapsed().as_secs_f64(),
            budget,
            params.lengths.iter().map(ToString::to_string).collect::<Vec<_>>(),
            params.nu,
            params.kernel,
            best_e.mean
        );
    }
    let pb = spinner("training", opts.quiet);
    let t = Instant::now();
    let model = Model::fit_with_unlabeled(train, &params, unlabeled)?;
    let secs = t.elapsed().as_secs_f64();
    pb.finish_and_clear();
    Ok((model, params, secs))
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
