//! The `milstream` command line: offline train / predict / explain / eval / cv / bench.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use milstream::data::{read_dataset, Format};
use milstream::mil::model::{BinaryMode, BoxKernelParams, KernelSpec, ModelKind, SvmParams};
use milstream::mil::select::{
    accuracy, auc, best_index, cross_validate, cross_validate_grid, cross_validate_grid_until,
    default_grid, stratified_folds, CvEstimate, CvReport,
};
use milstream::mil::{Dataset, FitParams, Model, ShapeletLength, View, WeakKind};

#[derive(Parser)]
#[command(
    name = "milstream",
    version,
    about = "Streaming multiple-instance learning: LPBoost over kernelized shapelets"
)]
struct Cli {
    /// Log lines on stderr: human-readable text, or one JSON object per line for a log
    /// pipeline (fields: timestamp, level, target, message and the event's fields, such as
    /// topic, partition, offset).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: Kafka -> windows -> scoring -> Parquet. With no --config it needs no
    /// external service: an in-process Kafka (librdkafka's mock cluster), a model trained
    /// from the bundled GunPoint data, and a demo feed of live sensor series.
    Run {
        /// TOML configuration (see deploy/milstream.example.toml); unset = the embedded default.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Embedded mode: start the mock cluster but no demo producer (produce with any Kafka
        /// client to the printed bootstrap address).
        #[arg(long)]
        no_demo_feed: bool,
    },
    /// Fit a model on a dataset and write the JSON artifact.
    Train {
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        opts: FitOptions,
    },
    /// Score every bag of a dataset with a saved model (one line per bag).
    Predict {
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        data: PathBuf,
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Print one JSON object per bag.
        #[arg(long)]
        json: bool,
        /// JSON lines with each bag's top hypotheses (`top`: hypothesis, class, offset,
        /// contribution w_j h_j(B)), the same data the daemon writes into prediction rows.
        #[arg(long)]
        explain: bool,
        /// Hypotheses per bag with --explain (the daemon's window.top_contributions default).
        #[arg(long, default_value_t = 3, requires = "explain")]
        top: usize,
    },
    /// Like predict, with each hypothesis's maximising instance and contribution w_j h_j(B).
    Explain {
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        data: PathBuf,
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Contributions shown per bag.
        #[arg(long, default_value_t = 5)]
        top: usize,
        /// Only the sample at this 0-based position in the file.
        #[arg(long)]
        index: Option<usize>,
        /// Draw the paper's Figure 1 for the sample at --index: SVG, or PNG when the name
        /// ends in .png. Prints the figure's data (segments, offsets, values) as JSON.
        #[arg(long, requires = "index")]
        out: Option<PathBuf>,
    },
    /// The model card: kind, classes, lengths, kernels, rounds, margin, sparsity, training.
    Inspect {
        model: PathBuf,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Replay GunPoint test series as live sensors (points and labels) into any Kafka
    /// cluster, the embedded default's demo feed on its own (e.g. for docker compose).
    DemoFeed {
        #[arg(long)]
        bootstrap: String,
        #[arg(long, default_value = "milstream.points")]
        points_topic: String,
        /// "" = no labels.
        #[arg(long, default_value = "milstream.labels")]
        labels_topic: String,
        #[arg(long, default_value_t = 8)]
        sensors: usize,
        /// Points per second over all sensors.
        #[arg(long, default_value_t = 400)]
        points_per_second: u64,
    },
    /// End-to-end daemon benchmark on the in-process mock cluster with the embedded model:
    /// points/s (pre-produced) or consume-to-durable latency (with --rate). Prints JSON.
    BenchStream {
        #[arg(long, default_value_t = 1_000_000)]
        points: usize,
        /// Points per Kafka message (1 = one record per message, 1000 = JSON arrays).
        #[arg(long, default_value_t = 1)]
        batch: usize,
        #[arg(long, default_value_t = 64)]
        series: usize,
        #[arg(long, default_value_t = 4)]
        partitions: i32,
        /// Produce at this many points/s while consuming and report latency.
        #[arg(long)]
        rate: Option<u64>,
        /// output.roll_age_ms for the run (bounds how long a row waits for its file).
        #[arg(long, default_value_t = 100)]
        roll_age_ms: u64,
        /// Drain the topic with a bare consumer instead of the daemon: what the mock cluster
        /// and librdkafka deliver before any decoding, scoring or writing.
        #[arg(long)]
        baseline: bool,
    },
    /// Fit on a training file, score a test file.
    Eval {
        #[arg(long)]
        train: PathBuf,
        #[arg(long)]
        test: PathBuf,
        #[command(flatten)]
        opts: FitOptions,
    },
    /// k-fold cross-validated accuracy on one file; with --models, one row per model kind.
    Cv {
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
    },
    /// Time one fit, and the full cross-validated grid search, on a training file; or,
    /// with --scaling, fit seconds and peak memory on n = 100, 200, 400, ..., 3,200 and
    /// 5,000 seeded cylinder-bell-funnel series of 150 points (one child process per n).
    Bench {
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
    },
}

/// Hyperparameters shared by train, eval, cv and bench.
#[derive(Args, Clone)]
struct FitOptions {
    /// Model kind: lpboost (shapelets, the core), miordm, boxsvm (box-counting kernel),
    /// misvm (MI-SVM), mi-svm. Series are bagged into subsequences of the first
    /// --shapelet-length at --stride for the kinds other than lpboost.
    #[arg(long = "model", default_value = "lpboost")]
    kind: ModelKind,
    /// Input layout; detected from the header when omitted (`bag_id,...` means mil).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Instance kernel.
    #[arg(long, value_enum, default_value_t = KernelArg::Gaussian)]
    kernel: KernelArg,
    /// Gaussian width in exp(-sigma |x-z|^2). Default `auto`: the median heuristic,
    /// 1 / median squared distance between training instances, per shapelet length.
    #[arg(long, default_value = "auto")]
    sigma: String,
    /// Multiplier on the median-heuristic sigma (ignored with an explicit --sigma).
    /// Default: the library's (4 for series, 1 for bags and with --paper).
    #[arg(long)]
    sigma_scale: Option<f64>,
    /// Polynomial kernel degree.
    #[arg(long, default_value_t = 2)]
    degree: u32,
    /// Polynomial kernel offset.
    #[arg(long, default_value_t = 1.0)]
    coef0: f64,
    /// Soft-margin parameter nu in (0, 1] (default: the library's; 0.2 with --paper).
    #[arg(long)]
    nu: Option<f64>,
    /// Shapelet lengths, comma separated: absolute (45) or a fraction of the shortest
    /// series (0.2). Several lengths form one model. Ignored for bag data. Default: the
    /// library's (see `FitParams::default`); 0.2 with --paper and for the bag kinds.
    #[arg(long, value_delimiter = ',')]
    shapelet_length: Vec<ShapeletLength>,
    /// The paper's hypothesis spaces only: raw contiguous subsequences of 0.2 x the
    /// shortest series, every space's DC weak learner in every round.
    #[arg(long)]
    paper: bool,
    /// Series views, comma separated: raw (the series), diff (its first difference).
    #[arg(long, value_delimiter = ',')]
    views: Vec<ViewArg>,
    /// Subsequence normalisation: z (z-normalised), raw (as they are) or both.
    #[arg(long, value_enum)]
    znorm: Option<ZnormArg>,
    /// Most dilations (1, 2, 4, ...) per length and view; 1 = contiguous only.
    #[arg(long)]
    dilations: Option<usize>,
    /// Spaces whose DC weak learner runs each round (best by their one-hot edge); 0 = all.
    #[arg(long)]
    dc_spaces: Option<usize>,
    /// No bias (the constant hypotheses +-1) in the hypothesis class, as in the paper.
    #[arg(long)]
    no_bias: bool,
    /// The paper's common soft-margin cap 1 / (nu m) instead of a class-balanced one.
    #[arg(long)]
    no_balance: bool,
    /// No mean hypotheses (sum_z alpha_z mean_x K(z, x)) in the class, as in the paper.
    #[arg(long)]
    no_mean: bool,
    /// Most training subsequences per space (a larger training stride beyond), or `all`.
    #[arg(long)]
    max_instances: Option<String>,
    /// Representatives per space from k-means++, or `all` (default: the library's; 100
    /// with --paper).
    #[arg(long)]
    k: Option<String>,
    /// Weak-learner subproblem: op2 (l1 ball, LP, sparse) or op1 (RKHS ball, SOCP).
    #[arg(long, value_enum, default_value_t = WeakArg::Op2)]
    weak: WeakArg,
    /// Two classes: `symmetric` poses one-vs-rest for both (default), `single` the paper's
    /// one problem with the second class (sorted) positive.
    #[arg(long, value_enum, default_value_t = BinaryArg::Symmetric)]
    binary: BinaryArg,
    /// Most boosting rounds.
    #[arg(long, default_value_t = 100)]
    max_rounds: usize,
    /// Stopping tolerance of LPBoost and the DC loop.
    #[arg(long, default_value_t = 1e-4)]
    epsilon: f64,
    /// Most DC iterations per weak-learner call; 0 = the one-hot start alone (default:
    /// the library's; 10 with --paper and for bags).
    #[arg(long)]
    dc_max_iters: Option<usize>,
    /// DC runs per weak-learner call, from the best one-hot starts (1 = the paper's
    /// single start, appendix A.3).
    #[arg(long, default_value_t = 1)]
    starts: usize,
    /// Subsequence stride used in training (prediction always uses every subsequence).
    #[arg(long, default_value_t = 1)]
    stride: usize,
    /// Choose length, nu and sigma by 5-fold cross-validation on the training data over the
    /// paper's grid (see `milstream::mil::select::default_grid`).
    #[arg(long)]
    search: bool,
    /// Seconds the --search may take (grid points not started by then are skipped; the
    /// first always runs). Default: 20 x one fit of the defaults on the training data.
    #[arg(long)]
    search_budget: Option<f64>,
    /// MIORDM: lambda (the paper's grid 2^7..2^10).
    #[arg(long, default_value_t = 256.0)]
    lambda: f64,
    /// MIORDM: theta, the insensitive zone of the margin distribution.
    #[arg(long, default_value_t = 0.7)]
    theta: f64,
    /// MIORDM: mu, the weight of the margin variance.
    #[arg(long, default_value_t = 0.7)]
    mu: f64,
    /// MIORDM, MI-SVM, mi-SVM: RBF width on [0, 1]-scaled features; `auto` = 1 / d for
    /// MIORDM (the paper's), the median heuristic for the SVMs.
    #[arg(long, default_value = "auto")]
    gamma: String,
    /// SVM soft-margin bound C (MI-SVM, mi-SVM, boxsvm). Default: 10 for the MI-SVMs, 100
    /// for boxsvm (whose features are scaled to unit mean squared norm).
    #[arg(long = "svm-c")]
    svm_c: Option<f64>,
    /// boxsvm: grid resolution s (features discretised to 0..s).
    #[arg(long, default_value_t = 20)]
    box_s: u32,
    /// boxsvm: FPRAS relative error epsilon.
    #[arg(long, default_value_t = 0.1)]
    box_epsilon: f64,
    /// boxsvm: FPRAS failure probability delta.
    #[arg(long, default_value_t = 0.01)]
    box_delta: f64,
    /// boxsvm: exponent of the sub-polynomial map x^rho; `auto` = 10 / the largest training
    /// ln count (the paper's 1/50 on MUSK).
    #[arg(long, default_value = "auto")]
    box_rho: String,
    /// boxsvm: the empirical kernel map's reference bags include the bags being scored in
    /// eval and cv (the paper's transduction).
    #[arg(long)]
    transductive: bool,
    /// Seed of k-means, fold assignment and the median heuristic.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Keep bag features as they are (by default they are z-scored with the training
    /// mean and deviation, stored in the model).
    #[arg(long)]
    no_standardize: bool,
    /// Print a JSON summary as the last line of stdout.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum ViewArg {
    Raw,
    Diff,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum ZnormArg {
    Z,
    Raw,
    Both,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum KernelArg {
    Gaussian,
    Linear,
    Poly,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum BinaryArg {
    Single,
    Symmetric,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum WeakArg {
    Op1,
    Op2,
}

impl FitOptions {
    /// The parameters for training on `ds`: the options given over the library's defaults
    /// (for bags or series; the paper's with --paper and for the other kinds).
    fn params(&self, ds: &Dataset) -> Result<FitParams> {
        let bags = matches!(ds.samples.first(), Some(milstream::mil::Sample::Bag(_)));
        let base = if self.paper || self.kind != ModelKind::Lpboost {
            FitParams::paper()
        } else if bags {
            FitParams::for_bags()
        } else {
            FitParams::default()
        };
        let base_scale = match base.kernel {
            KernelSpec::Gaussian { scale, .. } => scale,
            _ => 1.0,
        };
        let kernel = match self.kernel {
            KernelArg::Gaussian => {
                let sigma = match self.sigma.as_str() {
                    "auto" => None,
                    s => Some(s.parse::<f64>().with_context(|| {
                        format!("--sigma '{s}' is neither `auto` nor a number")
                    })?),
                };
                KernelSpec::Gaussian {
                    sigma,
                    scale: self.sigma_scale.unwrap_or(base_scale),
                }
            }
            KernelArg::Linear => KernelSpec::Linear,
            KernelArg::Poly => KernelSpec::Polynomial {
                degree: self.degree,
                coef0: self.coef0,
            },
        };
        let gamma = match self.gamma.as_str() {
            "auto" => None,
            g => Some(
                g.parse::<f64>()
                    .with_context(|| format!("--gamma '{g}' is neither `auto` nor a number"))?,
            ),
        };
        let k = match self.k.as_deref() {
            None => base.k,
            Some("all") => None,
            Some(s) => Some(
                s.parse::<usize>()
                    .with_context(|| format!("--k '{s}' is neither `all` nor a count"))?,
            ),
        };
        let mut spaces = base.spaces.clone();
        if !self.views.is_empty() {
            spaces.views = self
                .views
                .iter()
                .map(|v| match v {
                    ViewArg::Raw => View::Raw,
                    ViewArg::Diff => View::Diff,
                })
                .collect();
        }
        if let Some(z) = self.znorm {
            spaces.znorm = match z {
                ZnormArg::Z => vec![true],
                ZnormArg::Raw => vec![false],
                ZnormArg::Both => vec![true, false],
            };
        }
        if let Some(d) = self.dilations {
            spaces.dilations = d;
        }
        if let Some(n) = self.dc_spaces {
            spaces.dc_spaces = n;
        }
        if let Some(m) = &self.max_instances {
            spaces.max_instances = match m.as_str() {
                "all" => None,
                s => Some(s.parse::<usize>().with_context(|| {
                    format!("--max-instances '{s}' is neither `all` nor a count")
                })?),
            };
        }
        let p = FitParams {
            kernel,
            lengths: if self.shapelet_length.is_empty() {
                base.lengths.clone()
            } else {
                self.shapelet_length.clone()
            },
            spaces,
            bias: base.bias && !self.no_bias,
            mean_hypotheses: base.mean_hypotheses && !self.no_mean,
            balanced: base.balanced && !self.no_balance,
            stride: self.stride,
            k,
            nu: self.nu.unwrap_or(base.nu),
            epsilon: self.epsilon,
            max_rounds: self.max_rounds,
            weak: match self.weak {
                WeakArg::Op1 => WeakKind::Op1,
                WeakArg::Op2 => WeakKind::Op2,
            },
            binary: match self.binary {
                BinaryArg::Single => BinaryMode::Single,
                BinaryArg::Symmetric => BinaryMode::Symmetric,
            },
            dc_max_iters: self.dc_max_iters.unwrap_or(base.dc_max_iters),
            starts: self.starts,
            seed: self.seed,
            standardize: !self.no_standardize,
            kind: self.kind,
            miordm: milstream::mil::model::MiordmParams {
                lambda: self.lambda,
                theta: self.theta,
                mu: self.mu,
                gamma,
                ..Default::default()
            },
            svm: SvmParams {
                c: self.svm_c.unwrap_or(SvmParams::default().c),
                gamma,
                ..Default::default()
            },
            boxkernel: BoxKernelParams {
                s: self.box_s,
                c: self.svm_c.unwrap_or(BoxKernelParams::default().c),
                epsilon: self.box_epsilon,
                delta: self.box_delta,
                rho: match self.box_rho.as_str() {
                    "auto" => None,
                    r => Some(r.parse::<f64>().with_context(|| {
                        format!("--box-rho '{r}' is neither `auto` nor a number")
                    })?),
                },
                transductive: self.transductive,
            },
        };
        p.validate()?;
        Ok(p)
    }
}

fn progress(len: u64, what: &str, quiet: bool) -> ProgressBar {
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

fn spinner(what: &str, quiet: bool) -> ProgressBar {
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
fn load(path: &Path, format: Option<Format>) -> Result<Dataset> {
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

fn load_model(path: &Path) -> Result<Model> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading model {}", path.display()))?;
    Model::from_json(&text).with_context(|| format!("loading model {}", path.display()))
}

/// The default --search budget, in fits of the defaults on the training data.
const SEARCH_BUDGET_FITS: f64 = 20.0;

/// Fits with `opts`, running the inner grid search first when asked.
/// `unlabeled`: samples the fit may see without labels (only the transductive box kernel
/// uses them: eval passes its test file).
fn fit(
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
fn score(model: &Model, test: &Dataset, quiet: bool) -> Result<(f64, Option<f64>, f64)> {
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

fn summary_json(model: &Model) -> serde_json::Value {
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

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run {
            config,
            no_demo_feed,
        } => {
            let cfg = match &config {
                Some(p) => milstream::config::Config::load(p)?,
                None => milstream::config::Config::default(),
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
            rt.block_on(milstream::stream::run(
                cfg,
                milstream::stream::RunOptions {
                    no_demo_feed,
                    json_logs: cli.log_format == LogFormat::Json,
                },
                stop_rx,
            ))?;
            // librdkafka threads can outlive the runtime; the process is done.
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
        }
        Command::DemoFeed {
            bootstrap,
            points_topic,
            labels_topic,
            sensors,
            points_per_second,
        } => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                let (tx, rx) = tokio::sync::watch::channel(false);
                tokio::spawn(async move {
                    let _ = tokio::signal::ctrl_c().await;
                    let _ = tx.send(true);
                });
                milstream::stream::embedded::demo_feed(
                    bootstrap,
                    points_topic,
                    labels_topic,
                    sensors,
                    points_per_second,
                    rx,
                )
                .await;
            });
        }
        Command::BenchStream {
            points,
            batch,
            series,
            partitions,
            rate,
            roll_age_ms,
            baseline,
        } => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let opts = milstream::stream::bench::BenchOptions {
                points,
                batch: batch.max(1),
                series,
                partitions,
                rate,
                roll_age_ms,
                baseline,
            };
            let report = rt.block_on(milstream::stream::bench::bench(opts))?;
            println!("{report}");
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
        }
        Command::Train { data, out, opts } => {
            let train = load(&data, opts.format)?;
            let (model, _, secs) = fit(&train, &[], &opts)?;
            std::fs::write(&out, model.to_json())
                .with_context(|| format!("writing {}", out.display()))?;
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
        }
        Command::Predict {
            model,
            data,
            format,
            json,
            explain,
            top,
        } => {
            let model = load_model(&model)?;
            let ds = load(&data, format)?;
            for (i, s) in ds.samples.iter().enumerate() {
                if explain {
                    let e = model
                        .explain(s)
                        .with_context(|| format!("explaining {}", ds.ids[i]))?;
                    let top = milstream::stream::record::TopContribution::top(&e, top);
                    println!(
                        "{}",
                        json!({"id": ds.ids[i], "label": e.prediction.label, "scores": e.prediction.scores,
                               "truth": ds.labels[i], "top": top})
                    );
                    continue;
                }
                let p = model
                    .predict(s)
                    .with_context(|| format!("predicting {}", ds.ids[i]))?;
                if json {
                    println!(
                        "{}",
                        json!({"id": ds.ids[i], "label": p.label, "scores": p.scores, "truth": ds.labels[i]})
                    );
                } else {
                    println!(
                        "{}\t{}\t{}",
                        ds.ids[i],
                        p.label,
                        p.scores
                            .iter()
                            .map(|v| format!("{v:.6}"))
                            .collect::<Vec<_>>()
                            .join(",")
                    );
                }
            }
        }
        Command::Explain {
            model,
            data,
            format,
            top,
            index,
            out,
        } => {
            let model = load_model(&model)?;
            let ds = load(&data, format)?;
            if let Some(i) = index {
                anyhow::ensure!(
                    i < ds.len(),
                    "--index {i} is out of range: {} holds {} samples",
                    data.display(),
                    ds.len()
                );
            }
            if let (Some(out), Some(i)) = (&out, index) {
                let m = milstream::figure::shapelet_model(&model)?;
                let truth = Some(ds.labels[i].as_str()).filter(|t| !t.is_empty());
                let fig = milstream::figure::figure(m, &ds.samples[i], &ds.ids[i], truth)
                    .with_context(|| format!("explaining {}", ds.ids[i]))?;
                milstream::figure::write(&fig, out)?;
                println!(
                    "{}",
                    json!({"out": out.display().to_string(), "figure": fig})
                );
                return Ok(());
            }
            for (i, s) in ds.samples.iter().enumerate() {
                if index.is_some_and(|x| x != i) {
                    continue;
                }
                let mut e = model
                    .explain(s)
                    .with_context(|| format!("explaining {}", ds.ids[i]))?;
                e.contributions.truncate(top);
                println!(
                    "{}",
                    json!({"id": ds.ids[i], "truth": ds.labels[i], "explanation": e})
                );
            }
        }
        Command::Inspect { model, json } => {
            let model = load_model(&model)?;
            if json {
                println!("{}", milstream::card::card_json(&model));
            } else {
                print!("{}", milstream::card::card_text(&model));
            }
        }
        Command::Eval { train, test, opts } => {
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
        }
        Command::Cv {
            data,
            folds,
            models,
            opts,
        } if !models.is_empty() => {
            let ds = load(&data, opts.format)?;
            anyhow::ensure!(
                !opts.search,
                "--search with --models is not supported: compare kinds at their defaults, or search one kind at a time"
            );
            let mut reports = Vec::new();
            for kind in models {
                let mut o = opts.clone();
                o.kind = kind;
                let params = o.params(&ds)?;
                let pb = progress(folds as u64, kind.name(), opts.quiet);
                let r = cross_validate(&ds, &params, folds, opts.seed, &|| pb.inc(1))
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
        }
        Command::Cv {
            data, folds, opts, ..
        } => {
            let ds = load(&data, opts.format)?;
            let params = opts.params(&ds)?;
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
                    let est = cross_validate_grid(
                        &train,
                        &grid,
                        inner.min(train.len()),
                        opts.seed,
                        &|| pb.inc(1),
                    )?;
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
                let est = cross_validate_grid(
                    &ds,
                    std::slice::from_ref(&params),
                    folds,
                    opts.seed,
                    &|| pb.inc(1),
                )?;
                pb.finish_and_clear();
                est[0].fold_accuracies.clone()
            };
            let mean = accs.iter().sum::<f64>() / accs.len() as f64;
            let std = (accs.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>()
                / accs.len() as f64)
                .sqrt();
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
        }
        Command::Bench {
            scaling: true,
            opts,
            ..
        } => bench_scaling(&opts)?,
        Command::Bench {
            data,
            cbf,
            repeat,
            fit_only,
            opts,
            ..
        } => {
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
        }
    }
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
