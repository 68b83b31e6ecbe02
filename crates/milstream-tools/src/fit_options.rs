//! The fit options every front end shares: the command line's train, eval, cv and bench,
//! and the Python package (`python/`), which parses its estimators' parameters with this
//! same struct so the names and defaults have one source. `FitOptions`, how they become
//! `FitParams`, and `fit` (with the inner grid search of `--search`).

use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::data::Format;
use crate::mil::model::{
    BinaryMode, BoxKernelParams, KernelSpec, ModelKind, SvmParams, WidthChoice, Widths,
};
use crate::mil::select::{best_index, cross_validate_grid_until, default_grid, CvEstimate};
use crate::mil::{
    ChannelMode, Dataset, FitParams, Model, ShapeletLength, SpaceParams, View, WeakKind,
};

/// Hyperparameters shared by train, eval, cv and bench.
#[derive(Args, Clone)]
pub struct FitOptions {
    /// Model kind: lpboost (shapelets, the core), miordm, boxsvm (box-counting kernel),
    /// misvm (MI-SVM), mi-svm. Series are bagged into subsequences of the first
    /// --shapelet-length at --stride for the kinds other than lpboost.
    #[arg(long = "model", default_value = "lpboost")]
    pub kind: ModelKind,
    /// Input layout; detected from the header when omitted (`bag_id,...` means mil).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Instance kernel.
    #[arg(long, value_enum, default_value_t = KernelArg::Gaussian)]
    pub kernel: KernelArg,
    /// Gaussian width in exp(-sigma |x-z|^2). Default `auto`: the median heuristic,
    /// 1 / median squared distance between training instances, per shapelet length.
    #[arg(long, default_value = "auto")]
    pub sigma: String,
    /// Multiplier on the median-heuristic sigma (ignored with an explicit --sigma).
    /// Default: the library's, 4 for lpboost on series and bags alike; 1 with --paper and for
    /// the other kinds (their base is the paper's parameters).
    #[arg(long)]
    pub sigma_scale: Option<f64>,
    /// Gaussian widths chosen from the data: multiples of the median-heuristic sigma,
    /// comma separated (e.g. `4,2,1`, in order of preference), or `none` for the one width of
    /// --sigma-scale. Default: the library's (none; --sigma or --sigma-scale alone: none).
    #[arg(long, value_delimiter = ',')]
    pub sigma_scales: Vec<String>,
    /// How the width is chosen among --sigma-scales: `spaces` (each width a hypothesis
    /// space of one model; LPBoost takes the largest edge each round) or `inner-cv` (the
    /// best accuracy of a cross-validation on the training set, then one fit at it).
    #[arg(long, value_enum)]
    pub width_choice: Option<WidthChoiceArg>,
    /// Folds of `--width-choice inner-cv` (default 3).
    #[arg(long)]
    pub width_folds: Option<usize>,
    /// Polynomial kernel degree.
    #[arg(long, default_value_t = 2)]
    pub degree: u32,
    /// Polynomial kernel offset.
    #[arg(long, default_value_t = 1.0)]
    pub coef0: f64,
    /// Soft-margin parameter nu in (0, 1] (default: the library's; 0.2 with --paper).
    #[arg(long)]
    pub nu: Option<f64>,
    /// Shapelet lengths, comma separated: absolute (45) or a fraction of the shortest
    /// series (0.2). Several lengths form one model. Ignored for bag data. Default: the
    /// library's (see `FitParams::default`); 0.2 with --paper and for the bag kinds.
    #[arg(long, value_delimiter = ',')]
    pub shapelet_length: Vec<ShapeletLength>,
    /// The paper's hypothesis spaces only: raw contiguous subsequences of 0.2 x the
    /// shortest series, every space's DC weak learner in every round.
    #[arg(long)]
    pub paper: bool,
    /// Series views, comma separated: raw (the series), diff (its first difference),
    /// centred (each subsequence less its mean; not z-normalised, that is raw's z space),
    /// lag (the difference over the dilation, x[t+d] - x[t]: the first difference at d = 1).
    /// With diff and lag both given (the default: raw,diff,lag), diff is taken z-normalised
    /// and lag raw only.
    #[arg(long, value_delimiter = ',')]
    pub views: Vec<ViewArg>,
    /// With the default views: take the z-normalised change over the dilation (lag) instead
    /// of at lag 1 (diff) when the training series' differences are mostly noise, their
    /// median lag-1 autocorrelation below R (white noise: -0.5; smooth: near 1); `off` keeps
    /// the lag-1 difference. Views given by --views are taken as given. Default: the
    /// library's, -0.3.
    #[arg(long, value_name = "R")]
    pub lag_for_noisy_diff: Option<String>,
    /// Subsequence normalisation: z (z-normalised), raw (as they are) or both.
    #[arg(long, value_enum)]
    pub znorm: Option<ZnormArg>,
    /// Multichannel series: independent (a space per channel, the default) or dependent
    /// (one space whose instances are the block of all channels).
    #[arg(long, value_enum)]
    pub channels: Option<ChannelArg>,
    /// No level space (single raw points under a wide kernel, whose hypotheses read the
    /// distribution of a channel's values: "at least this share of the points lie near z").
    #[arg(long)]
    pub no_levels: bool,
    /// Most dilations (1, 2, 4, ...) per length and view; 1 = contiguous only.
    #[arg(long)]
    pub dilations: Option<usize>,
    /// Spaces whose DC weak learner runs each round (best by their one-hot edge); 0 = all.
    #[arg(long)]
    pub dc_spaces: Option<usize>,
    /// No bias (the constant hypotheses +-1) in the hypothesis class, as in the paper.
    #[arg(long)]
    pub no_bias: bool,
    /// The paper's common soft-margin cap 1 / (nu m) instead of a class-balanced one (series;
    /// bags have the common cap by default).
    #[arg(long, conflicts_with = "balance")]
    pub no_balance: bool,
    /// A class-balanced soft-margin cap 1 / (2 nu m_c) (the series default) for bags too.
    #[arg(long)]
    pub balance: bool,
    /// No mean hypotheses (sum_z alpha_z mean_x K(z, x)) in the class, as in the paper.
    #[arg(long)]
    pub no_mean: bool,
    /// No threshold hypotheses (+-1 by a max or mean hypothesis's side of a threshold:
    /// decision stumps on shapelet features) in the class, as in the paper.
    #[arg(long)]
    pub no_threshold: bool,
    /// No position thresholds (where a pattern's best match lies, as a share of the
    /// series) among the threshold hypotheses.
    #[arg(long)]
    pub no_position: bool,
    /// Position thresholds only when every class has at least this many training examples
    /// (0: always). Default: the library's, 12.
    #[arg(long, value_name = "N")]
    pub position_min_examples: Option<usize>,
    /// A class with fewer training examples than this gets a weight cap of at most the cap
    /// times its count over this, and more hypotheses a round (0: never). Default: the
    /// library's, 3.
    #[arg(long, value_name = "N")]
    pub few_examples: Option<usize>,
    /// A class with fewer training examples than this gets its weight cap times its count
    /// over this, at least 0.3 of the cap (0: never). Default: the library's, 30.
    #[arg(long, value_name = "N")]
    pub cap_examples: Option<usize>,
    /// Most columns a boosting round adds to the master LP (each with an edge above
    /// gamma): fewer master solves. Default: the library's, 2.
    #[arg(long, value_name = "N")]
    pub columns_per_round: Option<usize>,
    /// Add at most --columns-per-round columns a round whatever the training set's size
    /// (by default a round adds at least n / --max-rounds, n training bags: the round
    /// limit then reaches as many columns as there are bags).
    #[arg(long)]
    pub fixed_columns: bool,
    /// Solve each boosting round's master LP from scratch by the interior-point solver
    /// rather than re-optimise it from the last round's simplex basis (slower, the same
    /// optimum).
    #[arg(long)]
    pub no_warm_master: bool,
    /// Price every hypothesis space in every boosting round, rather than mostly the
    /// spaces that led the last full pricing (every 4th round prices all, and any round
    /// whose leaders offer no column above gamma; the same stopping rule, a fit 20 %
    /// faster on 12 channels).
    #[arg(long)]
    pub full_pricing: bool,
    /// With more than two classes, keep each one-vs-rest ensemble's own score rather than
    /// refitting the class scores over every class's hypotheses (the pooled ridge head).
    #[arg(long)]
    pub no_head: bool,
    /// Classes of unequal size (the largest at least 1.5 times the smallest, in a set of
    /// fewer than 300 examples): the inner fits on stratified folds whose held-out scores place the
    /// decision (0: the largest class score as fitted). Default: the library's, 3.
    #[arg(long, value_name = "N")]
    pub decision_folds: Option<usize>,
    /// A univariate series set of fewer than 200 examples is fitted N times, each fit on
    /// k / N representatives a space (at least 50) of a draw of its own, the class scores
    /// averaged (1: one fit; 2: a few thousandths more accuracy on small sets for about 1.3
    /// x the fit and twice the hypotheses to score, docs/VARIANTS.md). Default: the
    /// library's, 1.
    #[arg(long, value_name = "N")]
    pub sub_fits: Option<usize>,
    /// Cap on each hypothesis weight (the margin then rests on at least 1 / cap
    /// hypotheses), or `none` for the paper's LP. Default: the library's.
    #[arg(long)]
    pub max_weight: Option<String>,
    /// The most of the vote threshold hypotheses may hold (0..1]. Default: the library's.
    #[arg(long)]
    pub threshold_share: Option<f64>,
    /// Most training subsequences per space (a larger training stride beyond), or `all`.
    #[arg(long)]
    pub max_instances: Option<String>,
    /// Representatives per space from k-means++, or `all` (default: the library's; 100
    /// with --paper).
    #[arg(long)]
    pub k: Option<String>,
    /// Weak-learner subproblem: op2 (l1 ball, LP, sparse) or op1 (RKHS ball, SOCP).
    #[arg(long, value_enum, default_value_t = WeakArg::Op2)]
    pub weak: WeakArg,
    /// Two classes: `symmetric` poses one-vs-rest for both (default), `single` the paper's
    /// one problem with the second class (sorted) positive.
    #[arg(long, value_enum, default_value_t = BinaryArg::Symmetric)]
    pub binary: BinaryArg,
    /// Most boosting rounds.
    #[arg(long, default_value_t = 100)]
    pub max_rounds: usize,
    /// Stopping tolerance of LPBoost and the DC loop.
    #[arg(long, default_value_t = 1e-4)]
    pub epsilon: f64,
    /// Most DC iterations per weak-learner call; 0 = the one-hot start alone (default:
    /// the library's: 0, and 10 with --paper).
    #[arg(long)]
    pub dc_max_iters: Option<usize>,
    /// DC runs per weak-learner call, from the best one-hot starts (1 = the paper's
    /// single start, appendix A.3).
    #[arg(long, default_value_t = 1)]
    pub starts: usize,
    /// Most constraint-generation rounds (LP solves) per DC step, or `all` for each step to
    /// its optimum (the default, and the paper's). With `--paper --dc-max-iters 1`, 6 rounds
    /// fit MUSK1 on 9 features in 16 s against 70 s (10 folds) at 0.858 against 0.869.
    #[arg(long)]
    pub dc_generation_rounds: Option<String>,
    /// Subsequence stride used in training (prediction always uses every subsequence).
    #[arg(long, default_value_t = 1)]
    pub stride: usize,
    /// Choose length, nu and sigma by 5-fold cross-validation on the training data over the
    /// paper's grid (see `crate::mil::select::default_grid`).
    #[arg(long)]
    pub search: bool,
    /// Seconds the --search may take (grid points not started by then are skipped; the
    /// first always runs). Default: 20 x one fit of the defaults on the training data.
    #[arg(long)]
    pub search_budget: Option<f64>,
    /// MIORDM: lambda (the paper's grid 2^7..2^10).
    #[arg(long, default_value_t = 256.0)]
    pub lambda: f64,
    /// MIORDM: theta, the insensitive zone of the margin distribution.
    #[arg(long, default_value_t = 0.7)]
    pub theta: f64,
    /// MIORDM: mu, the weight of the margin variance.
    #[arg(long, default_value_t = 0.7)]
    pub mu: f64,
    /// MIORDM, MI-SVM, mi-SVM: RBF width on [0, 1]-scaled features; `auto` = 1 / d for
    /// MIORDM (the paper's), the median heuristic for the SVMs.
    #[arg(long, default_value = "auto")]
    pub gamma: String,
    /// SVM soft-margin bound C (MI-SVM, mi-SVM, boxsvm). Default: 10 for the MI-SVMs, 100
    /// for boxsvm (whose features are scaled to unit mean squared norm).
    #[arg(long = "svm-c")]
    pub svm_c: Option<f64>,
    /// boxsvm: grid resolution s (features discretised to 0..s).
    #[arg(long, default_value_t = 20)]
    pub box_s: u32,
    /// boxsvm: FPRAS relative error epsilon.
    #[arg(long, default_value_t = 0.1)]
    pub box_epsilon: f64,
    /// boxsvm: FPRAS failure probability delta.
    #[arg(long, default_value_t = 0.01)]
    pub box_delta: f64,
    /// boxsvm: exponent of the sub-polynomial map x^rho; `auto` = 10 / the largest training
    /// ln count (the paper's 1/50 on MUSK).
    #[arg(long, default_value = "auto")]
    pub box_rho: String,
    /// boxsvm: the empirical kernel map's reference bags include the bags being scored in
    /// eval and cv (the paper's transduction).
    #[arg(long)]
    pub transductive: bool,
    /// Seed of k-means, fold assignment and the median heuristic.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Keep bag features as they are (by default they are z-scored with the training
    /// mean and deviation, stored in the model).
    #[arg(long)]
    pub no_standardize: bool,
    /// Print a JSON summary as the last line of stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum ViewArg {
    Raw,
    Diff,
    /// Each subsequence less its mean: the level removed, the scale kept (raw only).
    Centred,
    /// The difference over the dilation, x[t+d] - x[t] (the first difference at d = 1).
    Lag,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum ChannelArg {
    Independent,
    Dependent,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum ZnormArg {
    Z,
    Raw,
    Both,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum WidthChoiceArg {
    Spaces,
    InnerCv,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum KernelArg {
    Gaussian,
    Linear,
    Poly,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum BinaryArg {
    Single,
    Symmetric,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum WeakArg {
    Op1,
    Op2,
}

impl FitOptions {
    /// The parameters for training on `ds`: the options given over the library's defaults
    /// (for bags or series; the paper's with --paper and for the other kinds).
    pub fn params(&self, ds: &Dataset) -> Result<FitParams> {
        let base = self.base(ds);
        let kernel = self.kernel(&base)?;
        let gamma = self.gamma()?;
        let k = self.k(&base)?;
        let spaces = self.spaces(&base)?;
        let widths = self.widths(&base)?;
        let max_weight = self.max_weight(&base)?;
        let dc_generation_rounds = self.dc_generation_rounds(&base)?;
        let boxkernel = self.boxkernel()?;
        let p = FitParams {
            widths,
            kernel,
            lengths: if self.shapelet_length.is_empty() {
                base.lengths.clone()
            } else {
                self.shapelet_length.clone()
            },
            spaces,
            bias: base.bias && !self.no_bias,
            mean_hypotheses: base.mean_hypotheses && !self.no_mean,
            threshold_hypotheses: base.threshold_hypotheses && !self.no_threshold,
            position_thresholds: base.position_thresholds && !self.no_position,
            position_min_examples: self
                .position_min_examples
                .unwrap_or(base.position_min_examples),
            few_examples: self.few_examples.unwrap_or(base.few_examples),
            cap_examples: self.cap_examples.unwrap_or(base.cap_examples),
            columns_per_round: self.columns_per_round.unwrap_or(base.columns_per_round),
            columns_for_size: base.columns_for_size && !self.fixed_columns,
            warm_master: base.warm_master && !self.no_warm_master,
            partial_pricing: base.partial_pricing.filter(|_| !self.full_pricing),
            pooled_head: base.pooled_head && !self.no_head,
            decision_folds: self.decision_folds.unwrap_or(base.decision_folds),
            sub_fits: self.sub_fits.unwrap_or(base.sub_fits),
            threshold_share: self.threshold_share.unwrap_or(base.threshold_share),
            max_weight,
            balanced: (base.balanced || self.balance) && !self.no_balance,
            stride: self.stride,
            k,
            // A k the user gives is every space's.
            k_shared_by_channels: base.k_shared_by_channels && self.k.is_none(),
            table_budget: base.table_budget.filter(|_| self.k.is_none()),
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
            dc_generation_rounds,
            seed: self.seed,
            draw: 0,
            standardize: !self.no_standardize,
            kind: self.kind,
            miordm: crate::mil::model::MiordmParams {
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
            boxkernel,
        };
        p.validate()?;
        Ok(p)
    }

    /// The library's defaults the options apply over: the paper's with --paper and for the
    /// kinds other than lpboost, otherwise the bag or the series defaults by `ds`'s samples.
    fn base(&self, ds: &Dataset) -> FitParams {
        let bags = matches!(ds.samples.first(), Some(crate::mil::Sample::Bag(_)));
        if self.paper || self.kind != ModelKind::Lpboost {
            FitParams::paper()
        } else if bags {
            FitParams::for_bags()
        } else {
            FitParams::default()
        }
    }

    /// The instance kernel of --kernel: a Gaussian's --sigma and --sigma-scale (over the
    /// base's scale), or the polynomial's --degree and --coef0.
    fn kernel(&self, base: &FitParams) -> Result<KernelSpec> {
        let base_scale = match base.kernel {
            KernelSpec::Gaussian { scale, .. } => scale,
            _ => 1.0,
        };
        Ok(match self.kernel {
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
        })
    }

    /// The RBF width --gamma of MIORDM and the MI-SVMs; None for `auto`.
    fn gamma(&self) -> Result<Option<f64>> {
        Ok(match self.gamma.as_str() {
            "auto" => None,
            g => Some(
                g.parse::<f64>()
                    .with_context(|| format!("--gamma '{g}' is neither `auto` nor a number"))?,
            ),
        })
    }

    /// Representatives per space (--k) over the base's; None for `all`.
    fn k(&self, base: &FitParams) -> Result<Option<usize>> {
        Ok(match self.k.as_deref() {
            None => base.k,
            Some("all") => None,
            Some(s) => Some(
                s.parse::<usize>()
                    .with_context(|| format!("--k '{s}' is neither `all` nor a count"))?,
            ),
        })
    }

    /// The hypothesis spaces: the base's, with the views, normalisation, channels,
    /// dilations, levels, DC spaces and instance cap the options give.
    fn spaces(&self, base: &FitParams) -> Result<SpaceParams> {
        let mut spaces = base.spaces.clone();
        if let Some(r) = self.lag_for_noisy_diff.as_deref() {
            spaces.lag_for_noisy_diff = match r {
                "off" => None,
                r => Some(r.parse::<f64>().with_context(|| {
                    format!("--lag-for-noisy-diff '{r}' is neither `off` nor a number")
                })?),
            };
        }
        if !self.views.is_empty() {
            // The user's views, as given.
            spaces.lag_for_noisy_diff = None;
            spaces.views = self
                .views
                .iter()
                .map(|v| match v {
                    ViewArg::Raw => View::Raw,
                    ViewArg::Diff => View::Diff,
                    ViewArg::Centred => View::Centred,
                    ViewArg::Lag => View::Lag,
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
        if let Some(c) = self.channels {
            spaces.channels = match c {
                ChannelArg::Independent => ChannelMode::Independent,
                ChannelArg::Dependent => ChannelMode::Dependent,
            };
        }
        if let Some(d) = self.dilations {
            spaces.dilations = d;
        }
        if self.no_levels {
            spaces.levels = false;
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
        Ok(spaces)
    }

    /// The cap on each hypothesis weight (--max-weight) over the base's; None for `none`.
    fn max_weight(&self, base: &FitParams) -> Result<Option<f64>> {
        Ok(match self.max_weight.as_deref() {
            None => base.max_weight,
            Some("none") => None,
            Some(c) => {
                Some(c.parse::<f64>().with_context(|| {
                    format!("--max-weight '{c}' is neither `none` nor a number")
                })?)
            }
        })
    }

    /// Constraint-generation rounds per DC step (--dc-generation-rounds) over the base's;
    /// None for `all`.
    fn dc_generation_rounds(&self, base: &FitParams) -> Result<Option<usize>> {
        Ok(match self.dc_generation_rounds.as_deref() {
            None => base.dc_generation_rounds,
            Some("all") => None,
            Some(r) => Some(
                r.parse::<usize>()
                    .ok()
                    .filter(|&r| r >= 1)
                    .with_context(|| {
                        format!("--dc-generation-rounds '{r}' is neither `all` nor a count >= 1")
                    })?,
            ),
        })
    }

    /// The box-counting kernel's parameters (boxsvm) from the --box-* options and --svm-c.
    fn boxkernel(&self) -> Result<BoxKernelParams> {
        Ok(BoxKernelParams {
            s: self.box_s,
            c: self.svm_c.unwrap_or(BoxKernelParams::default().c),
            epsilon: self.box_epsilon,
            delta: self.box_delta,
            rho: match self.box_rho.as_str() {
                "auto" => None,
                r => {
                    Some(r.parse::<f64>().with_context(|| {
                        format!("--box-rho '{r}' is neither `auto` nor a number")
                    })?)
                }
            },
            transductive: self.transductive,
        })
    }
}

impl FitOptions {
    /// The Gaussian widths chosen from the data: --sigma-scales over the base's, none when
    /// one width is given (--sigma, --sigma-scale) and no --sigma-scales.
    fn widths(&self, base: &FitParams) -> Result<Option<Widths>> {
        let scales: Option<Vec<f64>> = match self.sigma_scales.as_slice() {
            [] if self.sigma_scale.is_some() || self.sigma != "auto" => None,
            [] => base.widths.as_ref().map(|w| w.scales.clone()),
            [none] if none == "none" => None,
            list => Some(
                list.iter()
                    .map(|v| {
                        v.parse::<f64>().with_context(|| {
                            format!("--sigma-scales '{v}' is neither `none` nor a number")
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
        };
        let Some(scales) = scales else {
            if self.width_choice.is_some() || self.width_folds.is_some() {
                bail!("--width-choice and --width-folds need several widths (--sigma-scales)");
            }
            return Ok(None);
        };
        let base_folds = match base.widths.as_ref().map(|w| w.choice) {
            Some(WidthChoice::InnerCv { folds }) => Some(folds),
            _ => None,
        };
        let choice = match (self.width_choice, base_folds) {
            (Some(WidthChoiceArg::Spaces), _) | (None, None) if self.width_folds.is_none() => {
                WidthChoice::Spaces
            }
            (Some(WidthChoiceArg::Spaces), _) => {
                bail!("--width-folds goes with --width-choice inner-cv")
            }
            _ => WidthChoice::InnerCv {
                folds: self.width_folds.or(base_folds).unwrap_or(3),
            },
        };
        Ok(Some(Widths { scales, choice }))
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

/// The default --search budget, in fits of the defaults on the training data.
const SEARCH_BUDGET_FITS: f64 = 20.0;

/// Fits with `opts`, running the inner grid search first when asked.
/// `unlabeled`: samples the fit may see without labels (only the transductive box kernel
/// uses them: eval passes its test file).
pub fn fit(
    train: &Dataset,
    unlabeled: &[crate::mil::Sample],
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
                if p.kind == crate::mil::model::ModelKind::Lpboost {
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
