//! `milstream inspect`: the model card of a saved model, or a model's live figures from an
//! `evaluations/` folder (accuracy and confusion per model and version).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::Array;
use clap::Args;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::load_model;

#[derive(Args)]
pub struct InspectArgs {
    /// A model file, or a daemon's `evaluations/` folder (its live figures).
    model: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: InspectArgs) -> Result<()> {
    if args.model.is_dir() {
        return live_figures(&args.model, args.json);
    }
    let model = load_model(&args.model)?;
    if args.json {
        println!("{}", milstream::card::card_json(&model));
    } else {
        print!("{}", milstream::card::card_text(&model));
    }
    Ok(())
}

/// Per model and version: graded labels, correct ones, and (label, predicted) counts.
type Figures = BTreeMap<(String, String), (u64, u64, BTreeMap<(String, String), u64>)>;

fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = e?.path();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if path.is_dir() {
            parquet_files(&path, out)?;
        } else if !hidden && path.extension().is_some_and(|x| x == "parquet") {
            out.push(path);
        }
    }
    Ok(())
}

fn live_figures(dir: &Path, json: bool) -> Result<()> {
    let mut files = Vec::new();
    parquet_files(dir, &mut files)?;
    let mut figures = Figures::new();
    for f in &files {
        let file = std::fs::File::open(f)?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .with_context(|| format!("{}: not Parquet", f.display()))?
            .build()?;
        for batch in reader {
            let b = batch?;
            let col = |n: &str| {
                b.column_by_name(n).with_context(|| {
                    format!("{}: no column {n} (not an evaluations file)", f.display())
                })
            };
            let (name, version) = (
                col("model_name")?.as_string::<i32>(),
                col("model_version")?.as_string::<i32>(),
            );
            let (label, predicted) = (
                col("label")?.as_string::<i32>(),
                col("predicted")?.as_string::<i32>(),
            );
            let correct = col("correct")?.as_boolean();
            for i in 0..b.num_rows() {
                let key = (name.value(i).to_string(), version.value(i).to_string());
                let e = figures.entry(key).or_default();
                e.0 += 1;
                e.1 += u64::from(correct.is_valid(i) && correct.value(i));
                let cell = (label.value(i).to_string(), predicted.value(i).to_string());
                *e.2.entry(cell).or_default() += 1;
            }
        }
    }
    if json {
        let rows: Vec<_> = figures
            .iter()
            .map(|((m, v), (n, hits, confusion))| {
                serde_json::json!({
                    "model": m, "version": v, "labeled": n, "correct": hits,
                    "accuracy": *hits as f64 / (*n).max(1) as f64,
                    "confusion": confusion.iter().map(|((l, p), c)| serde_json::json!({"label": l, "predicted": p, "count": c})).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "files": files.len(), "models": rows })
        );
        return Ok(());
    }
    println!("{} evaluation files under {}", files.len(), dir.display());
    for ((m, v), (n, hits, confusion)) in &figures {
        println!(
            "{m} {v}: {hits}/{n} correct (accuracy {:.3})",
            *hits as f64 / (*n).max(1) as f64
        );
        for ((l, p), c) in confusion {
            println!("    label {l:>12}  predicted {p:>12}  {c}");
        }
    }
    Ok(())
}
