//! `milstream bench`: time one fit (median of --repeat) and the full cross-validated grid
//! search on a training file, or with --scaling fit time and peak memory against n.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;

use milstream::mil::select::{best_index, cross_validate_grid, default_grid};
use milstream::mil::Model;

use super::{load, peak_rss_bytes, progress, summary_json, FitOptions};

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, required_unless_present_any = ["scaling", "cbf", "score"])]
    data: Option<PathBuf>,
    /// Scoring without Kafka: nanoseconds per streamed point of the default GunPoint and
    /// ACSF1 models against the floor (each used space's new subsequence and its kernel row
    /// against the kept representatives), per window explained, bags/s of the bag model on
    /// MUSK1, and memory per live series.
    #[arg(long)]
    score: bool,
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
        score,
    } = args;
    if scaling {
        return bench_scaling(&opts);
    }
    if score {
        return bench_score(&opts);
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

/// Runs `f` repeatedly for at least `at_least`; nanoseconds per call.
fn ns_per_call(at_least: std::time::Duration, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    let mut calls = 0u64;
    while calls == 0 || t.elapsed() < at_least {
        f();
        calls += 1;
    }
    t.elapsed().as_nanos() as f64 / calls as f64
}

/// The values of every series of `ds`, one after the other: a long univariate stream.
fn concatenated(ds: &milstream::mil::Dataset) -> Vec<f64> {
    ds.samples
        .iter()
        .filter_map(|s| match s {
            milstream::mil::Sample::Series(v) => Some(v.as_slice()),
            _ => None,
        })
        .flatten()
        .copied()
        .collect()
}

/// `bench --score`: the incremental scorer on the default GunPoint and ACSF1 models (fitted
/// here from tests/data), per point and against the floor; bag scoring; memory per series.
fn bench_score(opts: &FitOptions) -> Result<()> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut models = Vec::new();
    let mut gunpoint = None;
    for name in ["GunPoint", "ACSF1"] {
        let ScoredModel {
            report,
            model,
            stream,
        } = score_default_model(&data, name)?;
        models.push(report);
        if name == "GunPoint" {
            gunpoint = Some((model, stream));
        }
    }

    let bags = time_bag_scoring()?;

    // Memory per live series: windows of 150 points with their scorers, as a worker holds
    // them (the resident growth over `series` series of 300 points each).
    let (model, stream) = gunpoint.expect("GunPoint ran");
    let series = 10_000usize;
    let memory = series_memory(model, &stream, series)?;

    let out = json!({
        "models": models,
        "bags": {
            "model": "MUSK1 bag default (LPBoost)",
            "features": 166,
            "mean_instances": bags.mean_instances,
            "bags_per_second": 1e9 / bags.ns_per_bag,
            "ns_per_bag": bags.ns_per_bag,
        },
        "memory": memory,
    });
    if opts.json {
        println!("{out}");
    } else {
        print_score_table(&out, &bags);
    }
    Ok(())
}

/// One default series model of `bench --score`: its report, and the model and the test
/// stream it was timed on (GunPoint's go on to the memory measurement).
struct ScoredModel {
    report: serde_json::Value,
    model: Model,
    stream: Vec<f64>,
}

/// The default model of `name` fitted on its training file in tests/data and timed on its
/// test series as one stream: the scorer against the floor, as its `models` report.
fn score_default_model(data: &std::path::Path, name: &str) -> Result<ScoredModel> {
    use milstream::mil::online::incremental::plan;
    use milstream::mil::FitParams;

    let train = load(&data.join(format!("{name}_TRAIN.csv")), None)?;
    let test = load(&data.join(format!("{name}_TEST.csv")), None)?;
    let t = Instant::now();
    let model = Model::fit(&train, &FitParams::default())?;
    let fit_seconds = t.elapsed().as_secs_f64();
    let Model::LpboostShapelet(m) = &model else {
        bail!("the default series model is an LPBoost shapelet model")
    };
    let window = train.min_series_len().unwrap_or(150).max(1);
    let stream = concatenated(&test);
    let p = plan(m);
    let (spaces_used, kept, groups) = p.shape();
    let reps_all: usize = m.spaces.iter().map(|s| s.count).sum();
    let scorer = time_scorer(&model, &stream, window)?;
    let floor = time_floor(m, &stream);
    let ns_point = scorer.ns_per_point;
    let ns_floor = floor.ns_per_point;
    let ns_point_in_runs = scorer.ns_per_point_in_runs;
    let heap = scorer.heap_bytes;
    let hyps: usize = m.ensembles.iter().map(|e| e.hypotheses.len()).sum();
    let report = json!({
        "model": format!("{name} default"),
        "fit_seconds": fit_seconds,
        "window": window,
        "spaces": m.spaces.len(),
        "spaces_used": spaces_used,
        "hypotheses": hyps,
        "hypothesis_groups": groups,
        "representatives": reps_all,
        "representatives_kept": kept,
        "ns_per_point": ns_point,
        "ns_per_point_per_space": ns_point / spaces_used.max(1) as f64,
        "floor_ns_per_point": ns_floor,
        "floor_ns_per_point_per_space": ns_floor / spaces_used.max(1) as f64,
        "ratio_to_floor": ns_point / ns_floor,
        "ns_per_point_in_runs_of_1000": ns_point_in_runs,
        "ratio_to_floor_in_runs_of_1000": ns_point_in_runs / ns_floor,
        "full_rows_ns_per_point": floor.full_rows_ns_per_point,
        "ns_per_explain": scorer.ns_per_explain,
        // A window read once per window of points (a hop of the window's length):
        // reading it recomputes at most one block per space.
        "ns_per_point_explained_every_window": ns_point + scorer.ns_per_explain / window as f64,
        "scorer_heap_bytes": {"block_maxima_in_window": heap[0], "block_maxima": heap[1], "recent": heap[2], "sums": heap[3]},
    });
    Ok(ScoredModel {
        report,
        model,
        stream,
    })
}

/// What the incremental scorer costs on a stream: per point, per point fed in runs, per
/// explanation, and the heap its state holds.
struct ScorerTimings {
    ns_per_point: f64,
    ns_per_point_in_runs: f64,
    ns_per_explain: f64,
    heap_bytes: [usize; 4],
}

/// Times the `WindowScorer` of `model` on `stream`: point by point, in runs of 1,000 points,
/// and explaining its window.
fn time_scorer(model: &Model, stream: &[f64], window: usize) -> Result<ScorerTimings> {
    use milstream::mil::online::incremental::WindowScorer;
    use std::hint::black_box;
    use std::time::Duration;

    // The scorer: warm (a full window), then timed point by point.
    let mut sc = WindowScorer::new(model, window)?;
    for &x in &stream[..window] {
        sc.push(model, x)?;
    }
    let mut i = window;
    let ns_point = ns_per_call(Duration::from_millis(1500), || {
        sc.push(model, stream[i])
            .expect("a point of the model's channel count");
        i = if i + 1 < stream.len() { i + 1 } else { window };
    });
    // The same stream fed in runs of 1,000 points (a 1,000-point array message of one
    // series): `push_points`, space by space.
    const RUN: usize = 1000;
    let mut runs = WindowScorer::new(model, window)?;
    runs.push_points(model, &stream[..window])?;
    let mut r = window;
    let ns_run = ns_per_call(Duration::from_millis(1500), || {
        if r + RUN > stream.len() {
            r = window;
        }
        runs.push_points(model, &stream[r..r + RUN])
            .expect("points of the model's channel count");
        r += RUN;
    });
    let ns_point_in_runs = ns_run / RUN as f64;
    let ns_explain = ns_per_call(Duration::from_millis(500), || {
        black_box(sc.explain(model).expect("explains"));
    });
    Ok(ScorerTimings {
        ns_per_point: ns_point,
        ns_per_point_in_runs: ns_point_in_runs,
        ns_per_explain: ns_explain,
        heap_bytes: sc.heap_bytes(),
    })
}

/// What a point costs at the least the plan allows, and what it cost before the plan.
struct FloorTimings {
    ns_per_point: f64,
    full_rows_ns_per_point: f64,
}

/// Times the floor of a point on `stream` (the plan's used spaces against their kept
/// representatives) and every space's full kernel row, the cost before the plan.
fn time_floor(m: &milstream::mil::shapelet::ShapeletModel, stream: &[f64]) -> FloorTimings {
    use milstream::mil::online::incremental::plan;
    use std::hint::black_box;
    use std::time::Duration;

    let p = plan(m);
    // The floor: each used space's new subsequence and its kernel row against the kept
    // representatives (the block maxima's one compare per hypothesis group aside).
    let foot = m
        .spaces
        .iter()
        .map(|s| s.extraction().footprint())
        .max()
        .unwrap_or(1);
    let (mut sub, mut row) = (Vec::new(), Vec::new());
    let mut j = foot;
    let ns_floor = ns_per_call(Duration::from_millis(1000), || {
        let pts = [&stream[j + 1 - foot..=j]];
        black_box(p.floor_point(&pts, &mut sub, &mut row));
        j = if j + 1 < stream.len() { j + 1 } else { foot };
    });
    // What a point cost before the plan: every space's full kernel row.
    let mut full = vec![0.0; m.spaces.iter().map(|s| s.count).max().unwrap_or(0)];
    let mut k = foot;
    let ns_full = ns_per_call(Duration::from_millis(1000), || {
        let pts = [&stream[k + 1 - foot..=k]];
        for s in &m.spaces {
            let e = s.extraction();
            let f = e.footprint();
            sub.resize(e.dim(), 0.0);
            e.extract_channels(&pts, foot - f, &mut sub);
            s.kernel_row(&sub, &mut full[..s.count]);
        }
        black_box(&full);
        k = if k + 1 < stream.len() { k + 1 } else { foot };
    });
    FloorTimings {
        ns_per_point: ns_floor,
        full_rows_ns_per_point: ns_full,
    }
}

/// What explaining a bag of the bag model costs, and how many instances a bag holds.
struct BagTimings {
    ns_per_bag: f64,
    mean_instances: f64,
}

/// Times the bag model (LPBoost with the bag defaults) explaining MUSK1's bags of 166
/// features, one after another.
fn time_bag_scoring() -> Result<BagTimings> {
    use std::hint::black_box;
    use std::time::Duration;

    // Bags: the bag model (LPBoost with the bag defaults) on MUSK1's bags of 166 features.
    let musk = milstream::stream::embedded::musk1();
    let bag_model = milstream::stream::embedded::train_embedded_bag_model(
        milstream::mil::model::ModelKind::Lpboost,
    )?;
    let mut b = 0;
    let ns_bag = ns_per_call(Duration::from_millis(1500), || {
        black_box(bag_model.explain(&musk.samples[b]).expect("a MUSK1 bag"));
        b = (b + 1) % musk.samples.len();
    });
    let instances: usize = musk
        .samples
        .iter()
        .map(|s| match s {
            milstream::mil::Sample::Bag(bag) => bag.len(),
            _ => 0,
        })
        .sum();
    Ok(BagTimings {
        ns_per_bag: ns_bag,
        mean_instances: instances as f64 / musk.samples.len().max(1) as f64,
    })
}

/// `bench --score` for a person: a line (and its heap bytes) per model, the bags, the memory.
fn print_score_table(out: &serde_json::Value, bags: &BagTimings) {
    for m in out["models"].as_array().into_iter().flatten() {
        println!(
            "{}: {:.0} ns/point over {} of {} spaces ({:.0} ns/point/space), {:.0} in runs of 1,000; \
             floor {:.0} ns/point ({:.2}x); full rows {:.0} ns/point; {} of {} representatives kept; explain {:.0} ns",
            m["model"].as_str().unwrap_or(""),
            m["ns_per_point"].as_f64().unwrap_or(f64::NAN),
            m["spaces_used"],
            m["spaces"],
            m["ns_per_point_per_space"].as_f64().unwrap_or(f64::NAN),
            m["ns_per_point_in_runs_of_1000"].as_f64().unwrap_or(f64::NAN),
            m["floor_ns_per_point"].as_f64().unwrap_or(f64::NAN),
            m["ratio_to_floor"].as_f64().unwrap_or(f64::NAN),
            m["full_rows_ns_per_point"].as_f64().unwrap_or(f64::NAN),
            m["representatives_kept"],
            m["representatives"],
            m["ns_per_explain"].as_f64().unwrap_or(f64::NAN),
        );
        println!(
            "  scorer heap bytes: {} (groups {})",
            m["scorer_heap_bytes"], m["hypothesis_groups"]
        );
    }
    println!(
        "bags: {:.0} bags/s (MUSK1, 166 features, {:.1} instances per bag)",
        1e9 / bags.ns_per_bag,
        bags.mean_instances
    );
    println!("memory: {}", out["memory"]);
}

/// Resident bytes per live series of 150-point windows with their scorers: `series` series
/// of 300 points each through one partition's windows (GunPoint's model and values).
fn series_memory(model: Model, stream: &[f64], series: usize) -> Result<serde_json::Value> {
    use milstream::stream::ingest::record::Point;
    use milstream::stream::score::window::{PartitionWindows, ScoringModel, WindowParams};
    use std::sync::Arc;
    let rss = || -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
    };
    let scoring = Arc::new(ScoringModel {
        model,
        version: "bench".into(),
        generation: 1,
    });
    let params = WindowParams {
        points: 150,
        duration_ms: 0,
        hop_ms: 1_500,
        lateness_ms: 0,
        idle_timeout_ms: 600_000,
        max_series: series,
    };
    let ids: Vec<std::sync::Arc<str>> =
        (0..series).map(|s| format!("pump-{s:06}").into()).collect();
    let before = rss();
    let t = Instant::now();
    let mut w = PartitionWindows::new(params);
    let mut out = Vec::new();
    let per_series = 300;
    let mut point = Point {
        series_id: "".into(),
        ts_ms: 0,
        value: 0.0,
        rest: Vec::new(),
        model: None,
    };
    for j in 0..per_series {
        for (s, id) in ids.iter().enumerate() {
            point.series_id = id.clone();
            point.ts_ms = 1_700_000_000_000 + j as i64 * 10;
            point.value = stream[(s * 7 + j) % stream.len()];
            w.on_point(&point, j as i64, ("bench", &scoring), true, &mut out);
            out.clear();
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let after = rss();
    let live = w.live_series();
    let per = match (before, after) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / live.max(1) as f64),
        _ => None,
    };
    // Where a series' bytes go, from capacities (per live series); the rest of the
    // resident growth is malloc's overhead and free memory it keeps.
    let parts = w.memory();
    let each = |b: usize| b as f64 / live.max(1) as f64;
    let heap = parts.map + parts.points + parts.pending + parts.scorer[1..].iter().sum::<usize>();
    drop(w);
    Ok(json!({
        "series": live,
        "points_per_series": per_series,
        "window_points": 150,
        "rss_bytes_per_live_series": per,
        "heap_bytes_per_live_series": {
            "map_and_ids": each(parts.map),
            "window_points": each(parts.points),
            "reorder_buffers": each(parts.pending),
            "block_maxima_in_window": each(parts.scorer[0]),
            "block_maxima": each(parts.scorer[1]),
            "scorer_recent_points": each(parts.scorer[2]),
            "scorer_sums": each(parts.scorer[3]),
            "total": each(heap),
        },
        "rss_bytes_for_100000_series": per.map(|p| p * 100_000.0),
        "points_per_second_in_process": (series * per_series) as f64 / secs,
    }))
}
