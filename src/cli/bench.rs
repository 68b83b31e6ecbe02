//! `milstream bench`: time one fit (median of --repeat) and the full cross-validated grid
//! search on a training file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use milstream::mil::select::{best_index, cross_validate_grid, default_grid};
use milstream::mil::Model;

use super::{load, progress, summary_json, FitOptions};

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long)]
    data: PathBuf,
    /// Repetitions of the single fit (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Skip the grid-search timing.
    #[arg(long)]
    fit_only: bool,
    #[command(flatten)]
    opts: FitOptions,
}

pub fn run(args: BenchArgs) -> Result<()> {
    let BenchArgs {
        data,
        repeat,
        fit_only,
        opts,
    } = args;
    let ds = load(&data, opts.format)?;
    let params = opts.params()?;
    let mut times = Vec::new();
    for r in 0..repeat.max(1) {
        let t = Instant::now();
        let m = Model::fit(&ds, &params)?;
        times.push(t.elapsed().as_secs_f64());
        if r == 0 && !opts.json {
            eprintln!("fit: {}", summary_json(&m));
        }
    }
    times.sort_by(f64::total_cmp);
    let fit_median = times[times.len() / 2];
    let mut out = json!({"fit_seconds_median": fit_median, "fit_seconds": times, "n_train": ds.len(),
                         "threads": rayon::current_num_threads()});
    if !fit_only {
        let input = ds.check_trainable()?;
        let grid = default_grid(&params, input);
        let pb = progress((grid.len() * 5) as u64, "search", opts.quiet);
        let t = Instant::now();
        let est = cross_validate_grid(&ds, &grid, 5, opts.seed, &|| pb.inc(1))?;
        pb.finish_and_clear();
        out["search_seconds"] = json!(t.elapsed().as_secs_f64());
        out["search_grid_points"] = json!(grid.len());
        out["search_best_cv_accuracy"] = json!(est[best_index(&est)].mean);
    }
    println!("{out}");
    Ok(())
}
