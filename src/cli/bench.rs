//! `milstream bench`: time one fit (median of --repeat) and the full cross-validated grid
//! search on a training file, or with --scaling fit time and peak memory against n.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;

use milstream::mil::select::{best_index, cross_validate_grid, default_grid};
use milstream::mil::Model;

use super::{load, progress, summary_json, FitOptions};

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, required_unless_present_any = ["scaling", "cbf"])]
    data: Option<PathBuf>,
    /// The scaling table (fit seconds, peak memory and a n log n comparison).
    #[arg(long)]
    scaling: bool,
    /// Fit on this many seeded cylinder-bell-funnel series of 150 points instead of
    /// --data (what --scaling runs per n).
    #[arg(long)]
    cbf: Option<usize>,
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
        scaling,
        cbf,
        repeat,
        fit_only,
        opts,
    } = args;
    if scaling {
        return bench_scaling(&opts);
    }
    let ds = match (cbf, data) {
        (Some(n), _) => milstream::data::cylinder_bell_funnel(n, 150, opts.seed),
        (None, Some(path)) => load(&path, opts.format)?,
        (None, None) => bail!("bench needs --data, --cbf or --scaling"),
    };
    let params = opts.params(&ds)?;
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
                         "threads": rayon::current_num_threads(),
                         "peak_rss_bytes": peak_rss_bytes()});
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

/// This process's peak resident memory (VmHWM), where /proc tells it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `bench --scaling`: one child process per n (so each peak memory is that fit's own),
/// each fitting n seeded cylinder-bell-funnel series of 150 points with the options given.
fn bench_scaling(opts: &FitOptions) -> Result<()> {
    let exe = std::env::current_exe().context("locating this executable")?;
    let mut passthrough: Vec<String> = std::env::args().skip(2).collect();
    passthrough.retain(|a| a != "--scaling" && a != "--json");
    let sizes = [100usize, 200, 400, 800, 1600, 3200, 5000];
    let mut rows = Vec::new();
    if !opts.json {
        println!(
            "{:>6} {:>9} {:>10} {:>12} {:>7}",
            "n", "fit s", "peak MiB", "s / n log n", "threads"
        );
    }
    for &n in &sizes {
        let o = std::process::Command::new(&exe)
            .arg("bench")
            .args([
                "--cbf",
                &n.to_string(),
                "--repeat",
                "1",
                "--fit-only",
                "--json",
                "--quiet",
            ])
            .args(&passthrough)
            .output()
            .context("running a bench child")?;
        if !o.status.success() {
            bail!(
                "bench --cbf {n} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let text = String::from_utf8_lossy(&o.stdout);
        let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap_or("{}"))
            .context("reading a bench child's JSON")?;
        let secs = v["fit_seconds_median"].as_f64().unwrap_or(f64::NAN);
        let peak = v["peak_rss_bytes"].as_u64().unwrap_or(0);
        let per = secs / (n as f64 * (n as f64).ln());
        if opts.json {
            rows.push(json!({"n": n, "fit_seconds": secs, "peak_rss_bytes": peak,
                             "seconds_per_n_log_n": per, "threads": v["threads"]}));
        } else {
            println!(
                "{n:>6} {secs:>9.2} {:>10.1} {:>12.3e} {:>7}",
                peak as f64 / 1048576.0,
                per,
                v["threads"]
            );
        }
    }
    if opts.json {
        println!(
            "{}",
            json!({"scaling": rows, "series_length": 150, "data": "cylinder-bell-funnel"})
        );
    }
    Ok(())
}
