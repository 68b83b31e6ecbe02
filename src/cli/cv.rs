//! `milstream cv`: k-fold cross-validated accuracy on one file (nested with --search), or
//! one row per model kind on the same folds with --models.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use milstream::mil::model::ModelKind;
use milstream::mil::select::{
    accuracy, best_index, cross_validate, cross_validate_grid, default_grid, stratified_folds,
    CvReport,
};
use milstream::mil::{Dataset, Model};

use super::{load, progress, FitOptions};

#[derive(Args)]
pub struct CvArgs {
    #[arg(long)]
    data: PathBuf,
    #[arg(long, default_value_t = 10)]
    folds: usize,
    /// Compare kinds on the same folds: e.g. `lpboost,miordm,boxsvm,misvm,mi-svm`
    /// (accuracy mean +- std, AUC, fit seconds per fold; with --json one object per
    /// kind). Each kind runs with its own defaults and the options given.
    #[arg(long, value_delimiter = ',')]
    models: Vec<ModelKind>,
    #[command(flatten)]
    opts: FitOptions,
}

pub fn run(args: CvArgs) -> Result<()> {
    let ds = load(&args.data, args.opts.format)?;
    if args.models.is_empty() {
        one_kind(&ds, args.folds, &args.opts)
    } else {
        compare_kinds(&ds, args.folds, args.models, &args.opts)
    }
}

/// `--models`: each kind at its defaults and the options given, on the same folds.
fn compare_kinds(
    ds: &Dataset,
    folds: usize,
    models: Vec<ModelKind>,
    opts: &FitOptions,
) -> Result<()> {
    anyhow::ensure!(
        !opts.search,
        "--search with --models is not supported: compare kinds at their defaults, or search one kind at a time"
    );
    let mut reports = Vec::new();
    for kind in models {
        let mut o = opts.clone();
        o.kind = kind;
        let params = o.params(ds)?;
        let pb = progress(folds as u64, kind.name(), opts.quiet);
        let r = cross_validate(ds, &params, folds, opts.seed, &|| pb.inc(1))
            .with_context(|| format!("cross-validating {kind}"))?;
        pb.finish_and_clear();
        if opts.json {
            println!("{}", serde_json::to_string(&r)?);
        }
        reports.push(r);
    }
    if !opts.json {
        print_cv_table(&reports);
    }
    Ok(())
}

/// The comparison table of `cv --models`.
fn print_cv_table(reports: &[CvReport]) {
    println!(
        "{:<10} {:>17} {:>7} {:>16}",
        "model", "accuracy", "auc", "fit s / fold"
    );
    for r in reports {
        println!(
            "{:<10} {:>8.4} +- {:.4} {:>7} {:>16.3}",
            r.kind,
            r.accuracy,
            r.accuracy_std,
            r.auc.map_or("-".into(), |a| format!("{a:.4}")),
            r.fit_seconds_mean
        );
    }
}

/// One kind: plain k-fold, or nested CV with `--search`.
fn one_kind(ds: &Dataset, folds: usize, opts: &FitOptions) -> Result<()> {
    let params = opts.params(ds)?;
    let t = Instant::now();
    let accs = if opts.search {
        // Nested CV: the grid search runs inside each outer training split, so the
        // estimate never sees its own test fold.
        let outer = stratified_folds(&ds.labels, folds, opts.seed)?;
        let input = ds.check_trainable()?;
        let grid = default_grid(&params, input);
        let inner = 5;
        let pb = progress((folds * grid.len() * inner) as u64, "nested cv", opts.quiet);
        let mut accs = Vec::with_capacity(folds);
        for test_idx in &outer {
            let train_idx: Vec<usize> = (0..ds.len())
                .filter(|i| test_idx.binary_search(i).is_err())
                .collect();
            let train = ds.subset(&train_idx);
            let est =
                cross_validate_grid(&train, &grid, inner.min(train.len()), opts.seed, &|| {
                    pb.inc(1)
                })?;
            let model = Model::fit(&train, &grid[best_index(&est)])?;
            let test = ds.subset(test_idx);
            let labels: Vec<String> = test
                .samples
                .iter()
                .map(|s| model.predict(s).map(|p| p.label))
                .collect::<Result<_, _>>()?;
            accs.push(accuracy(&labels, &test.labels));
        }
        pb.finish_and_clear();
        accs
    } else {
        let pb = progress(folds as u64, "folds", opts.quiet);
        let est =
            cross_validate_grid(ds, std::slice::from_ref(&params), folds, opts.seed, &|| {
                pb.inc(1)
            })?;
        pb.finish_and_clear();
        est[0].fold_accuracies.clone()
    };
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    let std =
        (accs.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / accs.len() as f64).sqrt();
    let secs = t.elapsed().as_secs_f64();
    if opts.json {
        println!(
            "{}",
            json!({"accuracy": mean, "accuracy_std": std, "fold_accuracies": accs, "folds": folds,
                   "n": ds.len(), "n_train": ds.len() - ds.len() / folds, "n_test": ds.len() / folds,
                   "seconds": secs, "train_seconds": secs, "predict_seconds": null, "auc": null,
                   "search": opts.search})
        );
    } else {
        println!("{folds}-fold accuracy {mean:.4} +- {std:.4}  ({secs:.1} s)");
    }
    Ok(())
}
