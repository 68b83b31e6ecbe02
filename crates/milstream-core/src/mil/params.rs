//! Fit parameters of every kind: what `Model::fit` takes and the artifact keeps.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use super::boost::weak::WeakKind;
use super::error::{MilError, Result};
pub use super::kinds::boxsvm::BoxKernelParams;
pub use super::kinds::miordm::MiordmParams;
pub use super::kinds::svm::SvmParams;
pub use super::lp::pricing::PartialPricing;
pub use super::space::{ChannelMode, Extraction, View};

/// A shapelet (subsequence) length: absolute, or a fraction of the shortest training series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeletLength {
    Absolute(usize),
    Fraction(f64),
}

impl fmt::Display for ShapeletLength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeletLength::Absolute(a) => write!(f, "{a}"),
            ShapeletLength::Fraction(x) => write!(f, "{x}"),
        }
    }
}

impl FromStr for ShapeletLength {
    type Err = String;
    /// `45` is absolute, `0.3` a fraction of the series length.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = s.trim();
        if let Ok(a) = s.parse::<usize>() {
            return if a >= 1 {
                Ok(Self::Absolute(a))
            } else {
                Err("a length must be >= 1".into())
            };
        }
        match s.parse::<f64>() {
            Ok(x) if x > 0.0 && x <= 1.0 => Ok(Self::Fraction(x)),
            _ => Err(format!(
                "'{s}' is neither a length >= 1 nor a fraction in (0, 1]"
            )),
        }
    }
}

/// How the kernel is chosen. For the Gaussian, `sigma: None` means the median heuristic
/// (1 / median squared distance between training instances, per shapelet length) times `scale`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum KernelSpec {
    Gaussian { sigma: Option<f64>, scale: f64 },
    Linear,
    Polynomial { degree: u32, coef0: f64 },
}

impl Default for KernelSpec {
    fn default() -> Self {
        KernelSpec::Gaussian {
            sigma: None,
            scale: 1.0,
        }
    }
}

/// How a two-class problem is posed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BinaryMode {
    /// One ensemble with the second class (in sorted order) as y = +1: the paper's setting.
    Single,
    /// One-vs-rest on both classes, the label with the larger g wins. The hypotheses
    /// max_x <u, Phi(x)> only say "some instance is near u", so a single ensemble reads
    /// evidence for its positive class only; posing both problems makes the model symmetric
    /// in which class is called positive. The default.
    #[default]
    Symmetric,
}

/// Which learner a fit runs. Every kind shares `Model`, the artifact, `predict` and `cv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// LPBoost over kernelized shapelets (Suehiro et al.): the core, any number of classes.
    #[default]
    Lpboost,
    /// MIORDM (Luan et al.): representative instances + optimal margin distribution.
    Miordm,
    /// The box-counting kernel (Tao et al.) through its empirical kernel map + SVM.
    Boxsvm,
    /// MI-SVM (Andrews et al.): bag-level witnesses.
    Misvm,
    /// mi-SVM (Andrews et al.): instance-level imputed labels.
    #[serde(rename = "mi-svm", alias = "mi_svm")]
    MiSvm,
}

impl ModelKind {
    pub const ALL: [ModelKind; 5] = [
        ModelKind::Lpboost,
        ModelKind::Miordm,
        ModelKind::Boxsvm,
        ModelKind::Misvm,
        ModelKind::MiSvm,
    ];

    /// The name on the command line and in the config.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Lpboost => "lpboost",
            ModelKind::Miordm => "miordm",
            ModelKind::Boxsvm => "boxsvm",
            ModelKind::Misvm => "misvm",
            ModelKind::MiSvm => "mi-svm",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        ModelKind::ALL
            .into_iter()
            .find(|k| k.name() == t || (t == "mi_svm" && *k == ModelKind::MiSvm))
            .ok_or_else(|| {
                format!(
                    "unknown model kind '{s}': one of {}",
                    ModelKind::ALL.map(ModelKind::name).join(", ")
                )
            })
    }
}

/// Hyperparameters of a fit. `Default` is the documented default of the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitParams {
    /// The learner; the fields below it that belong to other kinds are ignored.
    #[serde(default)]
    pub kind: ModelKind,
    pub kernel: KernelSpec,
    /// Shapelet lengths (series only); several form one union hypothesis class.
    pub lengths: Vec<ShapeletLength>,
    /// Subsequence stride used for training (prediction always uses every subsequence).
    pub stride: usize,
    /// Representatives per space (k-means++); None = every instance.
    pub k: Option<usize>,
    /// `k` is shared among a multichannel series' channels: each channel's spaces get k
    /// divided by the channel count, at most by 4 (see `prepare::representatives`). False
    /// when the user sets k, in the paper's form and in older artifacts.
    #[serde(default)]
    pub k_shared_by_channels: bool,
    /// The most representatives times training bags a space's tables hold: k is cut to
    /// this over the bag count. Every instance a representative (`k` None) grows the
    /// statistics tables and each round's pricing with bags x instances; this bounds both.
    /// None: no bound (the user's k, the series' 100, older artifacts).
    #[serde(default)]
    pub table_budget: Option<usize>,
    /// Soft-margin parameter nu in (0, 1].
    pub nu: f64,
    /// LPBoost and DC stopping tolerance.
    pub epsilon: f64,
    pub max_rounds: usize,
    pub weak: WeakKind,
    /// How two classes are posed (more than two are always one-vs-rest).
    #[serde(default)]
    pub binary: BinaryMode,
    pub dc_max_iters: usize,
    /// DC runs per weak-learner call, from the best one-hot starts (1 = the paper).
    #[serde(default = "default_one")]
    pub starts: usize,
    /// Most constraint-generation rounds (LP solves) of one DC step; a step stopped short
    /// takes the partial LP's alpha if it raises the edge. None = each step to its optimum
    /// (the paper's, and older artifacts).
    #[serde(default)]
    pub dc_generation_rounds: Option<usize>,
    pub seed: u64,
    /// Which draw of representatives a sub-fit takes (see `subfits`): mixed into the
    /// k-means++ seeds only, so the sub-fits share their widths and spaces. 0 for a
    /// model's own fit; never stored.
    #[serde(skip)]
    pub draw: u64,
    /// z-score bag features with the training mean and deviation (bags only; series are
    /// taken as they come, as the UCR archive's are already normalised).
    #[serde(default = "default_true")]
    pub standardize: bool,
    #[serde(default)]
    pub miordm: MiordmParams,
    /// C and the RBF width of MI-SVM / mi-SVM.
    #[serde(default)]
    pub svm: SvmParams,
    #[serde(default)]
    pub boxkernel: BoxKernelParams,
    /// Constant hypotheses +1 and -1 join the class (a bias; beyond the paper, whose g has
    /// none): one-vs-rest problems are unbalanced, and without it no shapelet may have a
    /// positive edge for a small class.
    #[serde(default)]
    pub bias: bool,
    /// Mean hypotheses join the class: sum_z alpha_z mean_x K(z, x), a soft count of a
    /// pattern's occurrences (beyond the paper, whose hypotheses take the max).
    #[serde(default)]
    pub mean_hypotheses: bool,
    /// Threshold hypotheses join the class: 1 when a one-hot max or mean hypothesis's value
    /// is on one side of a threshold, else 0 (beyond the paper: decision stumps on shapelet
    /// features, as in classical LPBoost; they let g weigh "this pattern occurs at least
    /// this much" without assuming the evidence grows linearly with the similarity).
    #[serde(default)]
    pub threshold_hypotheses: bool,
    /// Threshold hypotheses may also read where a representative's best match lies (the
    /// maximising subsequence's relative position; RDST's argmin feature), not only how
    /// close it is. Only with `threshold_hypotheses`; false in older artifacts.
    #[serde(default)]
    pub position_thresholds: bool,
    /// Position thresholds only when every class has at least this many training examples:
    /// a position threshold is fitted to where the best match lies in each example, and
    /// with a handful per class it fits those few positions (issue 26: GunPoint at 6 per
    /// class 0.883 with them, 0.948 without; equal at 8-12; better from 14). 0 (older
    /// artifacts) sets no minimum.
    #[serde(default)]
    pub position_min_examples: usize,
    /// A class with fewer training examples m_c than this has its weight cap at most
    /// m_c / few_examples of `max_weight` (with `cap_examples`, whichever is lower), so its margin rests on more hypotheses and the pooled head has
    /// more to pool; each of its rounds then adds up to 4 ceil(few_examples / m_c) of the
    /// spaces' best columns with an edge above gamma rather than the best two, which keeps
    /// its rounds few. With two series per class many hypotheses separate the pair by some
    /// chance detail (issue 26; mean of four draws, 3 against off: 40 classes 0.732 ->
    /// 0.834, ACSF1 0.530 -> 0.615, 14 classes 0.622 -> 0.653; 5 is more accurate on 40
    /// classes but fits 2x slower; docs/VARIANTS.md). 0 (older artifacts) leaves every
    /// class at `max_weight`.
    #[serde(default)]
    pub few_examples: usize,
    /// A class with fewer training examples m_c than this has its weight cap scaled by
    /// m_c / cap_examples, to no less than [`CAP_FLOOR`] of `max_weight`: the fewer its
    /// examples, the more hypotheses its vote rests on. A sparse vote over a dozen series a
    /// class fits their chance detail (GunPoint at 12 a class: 0.89 to 1.00 by the seed
    /// that picks the representatives), and a spread one costs rounds, which a class of
    /// many examples need not pay (issue 26; docs/VARIANTS.md, "The weight cap by class
    /// size"). 0 (older artifacts) leaves every class at `max_weight`.
    #[serde(default)]
    pub cap_examples: usize,
    /// Each boosting round adds up to this many columns with an edge above gamma: the
    /// round's best kernel and threshold hypotheses, then every space's best of each kind
    /// by gain (column generation for the dual (5) of Algorithm 1 may add every violated
    /// column at once: the same optimum in fewer master solves). Below 2 (older artifacts)
    /// it is 2, the best of each kind.
    #[serde(default)]
    pub columns_per_round: usize,
    /// A round adds at least ceil(n / max_rounds) columns (n training bags), so the round
    /// limit can place as many columns as there are bags: LPBoost's optimum has up to n
    /// hypotheses with weight, and on 500 training series two a round stopped every class
    /// at the limit, short of it. Changes nothing where boosting converges within the limit
    /// at two a round (n <= 2 max_rounds). Series only: false for bags, in older artifacts
    /// and in the paper's form.
    #[serde(default)]
    pub columns_for_size: bool,
    /// The master LP of each boosting round re-optimised by a simplex from the last
    /// round's basis (`lpboost::WarmMaster`) instead of solved from scratch by the
    /// interior-point solver; rounds whose optimal sample weights are not unique still go
    /// to the interior-point solver, so boosting keeps its path up to near-ties (see
    /// docs/MODEL.md). True by default; false in artifacts from before the option (they
    /// were fitted without it, and a retrain from their parameters keeps that).
    #[serde(default)]
    pub warm_master: bool,
    /// Partial pricing (see `pricing::PartialPricing`): most boosting rounds price the
    /// spaces that led the last full pricing. None (older artifacts, the paper's form):
    /// every round prices every space.
    #[serde(default)]
    pub partial_pricing: Option<PartialPricing>,
    /// Classes of unequal size (series; two classes one-vs-rest on both): the decision moves
    /// by the held-out scores of this many stratified folds (two classes to the midpoint of
    /// their median score difference, more by one offset a class; see `decision.rs`); 0:
    /// never (older artifacts, the paper's form).
    #[serde(default)]
    pub decision_folds: usize,
    /// With more than two classes, the class scores are refit over every class's
    /// hypotheses by ridge regression (see `head::PooledHead`) rather than taken from each
    /// one-vs-rest ensemble alone. False in older artifacts and the paper's form.
    #[serde(default)]
    pub pooled_head: bool,
    /// A univariate series set of fewer than 200 examples is fitted this many times, each
    /// fit on k / N representatives a space of a draw of its own (at least 50), and the
    /// fits' class scores averaged in one model (see `subfits`). 1: one fit (the default,
    /// older artifacts, the paper's form, bags).
    #[serde(default = "one_fit")]
    pub sub_fits: usize,
    /// The most of the vote (summed weight) threshold hypotheses may hold; the rest comes
    /// from the kernel hypotheses (see `lpboost::BoostParams::group_share`).
    #[serde(default = "full_share")]
    pub threshold_share: f64,
    /// Cap on each hypothesis weight w_j (see `lpboost::BoostParams::max_weight`); None is
    /// the paper's LP (and older artifacts).
    #[serde(default)]
    pub max_weight: Option<f64>,
    /// Class-balanced soft margin (see `lpboost::BoostParams::balanced`); the paper's
    /// common cap when false.
    #[serde(default)]
    pub balanced: bool,
    /// Hypothesis spaces of a series model beyond the lengths (views, normalisation,
    /// dilations). Artifacts from before it load as the paper's raw subsequences.
    #[serde(default = "SpaceParams::paper")]
    pub spaces: SpaceParams,
    /// Gaussian widths chosen from the data (the median-heuristic kernel only): several
    /// widths as spaces of one model, or one width by inner cross-validation. None: the
    /// kernel's own width (and older artifacts).
    #[serde(default)]
    pub widths: Option<Widths>,
}

/// Several Gaussian widths, as multiples of the median-heuristic sigma (issue 26: MUSK1 on
/// 9 features wants 1 x, on 166 features 4 x; no single width holds on both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Widths {
    /// Multiples of the median-heuristic sigma, in order of preference (ties of the inner
    /// cross-validation go to the earlier).
    pub scales: Vec<f64>,
    pub choice: WidthChoice,
}

/// How the width is chosen among `Widths::scales`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WidthChoice {
    /// Every width is a hypothesis space of its own over the same representatives: the
    /// hypothesis class is their union and LPBoost takes the largest edge among them, so
    /// Algorithm 1 is unchanged (as with several shapelet lengths).
    Spaces,
    /// The width of the best mean accuracy of a `folds`-fold cross-validation on the
    /// training set (the label-free preparation shared), then one fit at that width.
    InnerCv { folds: usize },
}

impl Widths {
    /// The kernel of every width when `kernel` is the median-heuristic Gaussian; None for
    /// any other kernel (an explicit sigma or another kernel keeps its own).
    pub fn kernels(&self, kernel: &KernelSpec) -> Option<Vec<KernelSpec>> {
        match *kernel {
            KernelSpec::Gaussian { sigma: None, .. } => Some(
                self.scales
                    .iter()
                    .map(|&scale| KernelSpec::Gaussian { sigma: None, scale })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Which spaces a series model searches besides its lengths: every combination of a view,
/// a normalisation and a dilation 1, 2, 4, ... (as many as fit the median training series,
/// at most `dilations`) forms one space; LPBoost takes the largest edge among all of them.
/// Two exceptions: the centred view is taken unnormalised only (z-normalised, it is the raw
/// view's z space), and with both difference views the first difference is taken
/// z-normalised and the change over the dilation unnormalised (at d = 1 they are the same
/// values): the shape of the finest changes, and the size of the changes over the
/// dilation, which a level shift does not move and the noise does not swamp (the
/// default; docs/VARIANTS.md has the measurements).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceParams {
    pub views: Vec<View>,
    /// z-normalise subsequences (true), take them as they are (false), or both.
    pub znorm: Vec<bool>,
    /// Most dilations per length and view (1 = contiguous subsequences only).
    pub dilations: usize,
    /// Spaces whose DC weak learner runs in a round, the best by their one-hot edge; the
    /// rest are priced by that edge alone. 0 = every space (the paper's, exact).
    #[serde(default)]
    pub dc_spaces: usize,
    /// Most training subsequences per space: a longer training set is read at a larger
    /// stride (prediction always takes every subsequence). None = no bound.
    #[serde(default)]
    pub max_instances: Option<usize>,
    /// Representatives are the k-means++ seeds drawn from a sample of this many
    /// subsequences, without Lloyd iterations; None = the paper's k-means (appendix A.3).
    #[serde(default)]
    pub seeds_only: Option<usize>,
    /// How multichannel series are read: a space per channel, or one over all channels.
    /// Absent (and not written) for the default, so univariate artifacts are unchanged.
    #[serde(default, skip_serializing_if = "ChannelMode::is_default")]
    pub channels: ChannelMode,
    /// A level space per channel: single points of the raw series, unnormalised, under a
    /// wide kernel ([`LEVEL_SCALE`]), so the mean and threshold hypotheses read the
    /// distribution of a channel's values ("at least this share of the points lie near
    /// z"), which every z-normalised space discards and a subsequence space reads only
    /// through its shapes (issue 26: ACSF1Frames, 12 spectral channels, 0.511 -> 0.571
    /// over six draws; docs/VARIANTS.md). False in older artifacts and the paper's form.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub levels: bool,
    /// With both change views, the z-normalised change is taken over the dilation (lag)
    /// instead of at lag 1 when a univariate training set's lag-1 differences are mostly
    /// noise: their median lag-1 autocorrelation below this (white noise -0.5, smooth near
    /// 1; `prepare::views_for_differences`). None: the views as given (older artifacts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_for_noisy_diff: Option<f64>,
}

/// The median-heuristic multiple of a level space's Gaussian width (with the default
/// median-heuristic kernel): a soft histogram of one channel's values wants bins wider
/// than the typical gap between two values, where a subsequence space wants a kernel 4 x
/// narrower than it (`FitParams::default`).
pub const LEVEL_SCALE: f64 = 0.25;

/// [`SpaceParams::lag_for_noisy_diff`]'s default: (S - N / 2) / (S + N), a difference of a
/// smooth change S and white noise N, is -0.3 at S = 0.15 N (noise 87 % of the variance).
pub const NOISY_DIFF_AUTOCORRELATION: f64 = -0.3;

impl SpaceParams {
    /// The paper's: raw contiguous subsequences, every space's DC learner in every round.
    pub fn paper() -> Self {
        Self {
            views: vec![View::Raw],
            znorm: vec![false],
            dilations: 1,
            dc_spaces: 0,
            max_instances: None,
            seeds_only: None,
            channels: ChannelMode::default(),
            levels: false,
            lag_for_noisy_diff: None,
        }
    }

    /// The spaces of a training set of `channels`-channel series whose median series has
    /// `median_len` points: each univariate space per channel (independent) or over the
    /// block of all channels (dependent).
    pub fn extractions(
        &self,
        lengths: &[usize],
        median_len: usize,
        channels: usize,
    ) -> Vec<Extraction> {
        let one = self.univariate_extractions(lengths, median_len);
        match (channels, self.channels) {
            (0 | 1, _) => one,
            (d, ChannelMode::Dependent) => one
                .into_iter()
                .map(|e| Extraction { block: d, ..e })
                .collect(),
            (d, ChannelMode::Independent) => (0..d)
                .flat_map(|c| one.iter().map(move |e| e.on_channel(c)))
                .collect(),
        }
    }

    fn univariate_extractions(&self, lengths: &[usize], median_len: usize) -> Vec<Extraction> {
        let both_changes = self.views.contains(&View::Diff) && self.views.contains(&View::Lag);
        let mut out = Vec::new();
        for &l in lengths {
            for d in super::space::dilations(l, median_len, self.dilations.max(1)) {
                for &view in &self.views {
                    for &znorm in &self.znorm {
                        if znorm && view == View::Centred {
                            continue; // the raw view's z space
                        }
                        if both_changes
                            && ((view == View::Lag && znorm) || (view == View::Diff && !znorm))
                        {
                            continue; // one change space per normalisation (equal at d = 1)
                        }
                        out.push(Extraction {
                            view,
                            length: l,
                            dilation: d,
                            znorm,
                            channel: 0,
                            block: 0,
                            unit_exp: 0,
                        });
                    }
                }
            }
        }
        let level = Extraction::level();
        if self.levels && !out.contains(&level) {
            out.push(level);
        }
        out
    }
}

impl Default for SpaceParams {
    fn default() -> Self {
        Self {
            views: vec![View::Raw, View::Diff, View::Lag],
            znorm: vec![true, false],
            dilations: 8,
            dc_spaces: 1,
            max_instances: Some(40_000),
            seeds_only: Some(4_000),
            channels: ChannelMode::default(),
            levels: true,
            lag_for_noisy_diff: Some(NOISY_DIFF_AUTOCORRELATION),
        }
    }
}

/// The bag defaults' bound on representatives times training bags a width's table holds
/// (`FitParams::table_budget`): a million bag statistics (28 bytes each, 28 MB a width)
/// keep every instance a representative up to 5,000 instances at 200 bags (MUSK2's 92
/// training bags keep all their 5,900) and 500 representatives at 2,000 bags (a 2,000-bag
/// set of 10,000 instances: 0.2 GB peak against 0.36 GB at twice the budget, the same
/// accuracy).
pub const BAG_TABLE_BUDGET: usize = 1_000_000;

/// The least share of `max_weight` that [`FitParams::cap_examples`] leaves a class.
pub const CAP_FLOOR: f64 = 0.3;

fn default_one() -> usize {
    1
}

fn default_true() -> bool {
    true
}

impl Default for FitParams {
    fn default() -> Self {
        Self {
            // Chosen on the development series (GunPoint, Coffee, ACSF1; see README): one
            // length at dilations 1, 2, 4, ... (the receptive fields several lengths would
            // give, measured better than 7 and 11), a kernel 4 x narrower than the median
            // heuristic, nu 0.1, and the one-hot hypotheses alone (the DC loop cost 3-4 x
            // the fit time and gained nothing there).
            kernel: KernelSpec::Gaussian {
                sigma: None,
                scale: 4.0,
            },
            lengths: vec![ShapeletLength::Absolute(9)],
            stride: 1,
            k: Some(100),
            k_shared_by_channels: true,
            table_budget: None,
            nu: 0.1,
            epsilon: 1e-4,
            max_rounds: 100,
            weak: WeakKind::Op2,
            binary: BinaryMode::Symmetric,
            dc_max_iters: 0,
            starts: 1,
            dc_generation_rounds: None,
            seed: 0,
            draw: 0,
            standardize: true,
            kind: ModelKind::Lpboost,
            miordm: MiordmParams::default(),
            svm: SvmParams::default(),
            boxkernel: BoxKernelParams::default(),
            spaces: SpaceParams::default(),
            bias: true,
            mean_hypotheses: true,
            threshold_hypotheses: true,
            position_thresholds: true,
            position_min_examples: 12,
            few_examples: 3,
            cap_examples: 30,
            columns_per_round: 2,
            columns_for_size: true,
            warm_master: true,
            partial_pricing: Some(PartialPricing::default()),
            pooled_head: true,
            sub_fits: 1,
            decision_folds: 3,
            threshold_share: 0.5,
            max_weight: Some(0.05),
            balanced: true,
            widths: None,
        }
    }
}

fn one_fit() -> usize {
    1
}

fn full_share() -> f64 {
    1.0
}

impl FitParams {
    /// These parameters with `overrides` (an object of the same keys as the serialized
    /// params, as in a model artifact's `params`) written over them; nested objects merge
    /// key by key. An unknown key or a value of the wrong type is an error naming it.
    pub fn overlaid(
        &self,
        overrides: &serde_json::Value,
    ) -> std::result::Result<FitParams, String> {
        fn merge(
            base: &mut serde_json::Value,
            over: &serde_json::Value,
            path: &str,
        ) -> std::result::Result<(), String> {
            let (Some(b), Some(o)) = (base.as_object_mut(), over.as_object()) else {
                *base = over.clone();
                return Ok(());
            };
            for (k, v) in o {
                let key = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get_mut(k) {
                    Some(slot) => merge(slot, v, &key)?,
                    // Fields absent when default (skip_serializing_if) may still be set.
                    None if path == "spaces" && k == "channels" => {
                        b.insert(k.clone(), v.clone());
                    }
                    None => return Err(format!("unknown fit parameter `{key}`")),
                }
            }
            Ok(())
        }
        let mut base = serde_json::to_value(self).map_err(|e| e.to_string())?;
        merge(&mut base, overrides, "")?;
        serde_json::from_value(base).map_err(|e| format!("fit parameters: {e}"))
    }

    /// How many columns a boosting round may add for one class's problem (n training bags,
    /// m_c of them the class's), and its weight cap. Column generation for the dual (5) of
    /// Algorithm 1 may add every violated column at once: the same optimum in fewer master
    /// solves.
    /// - A class of few examples: many hypotheses separate its handful from the rest by some
    ///   chance detail, so its vote is spread over more of them (a cap m_c / few_examples of
    ///   max_weight's) and a round adds more of the spaces' best.
    /// - A class of fewer than `cap_examples`: a cap m_c / cap_examples of max_weight's, at
    ///   least [`CAP_FLOOR`] of it.
    /// - With `columns_for_size`, at least ceil(n / max_rounds): the round limit can then place
    ///   as many columns as the LP's optimum may use (up to n).
    pub(crate) fn round_plan(&self, n: usize, m_c: usize) -> (usize, Option<f64>) {
        let mut batch = self.columns_per_round.max(2);
        let mut cap = self.max_weight;
        if self.columns_for_size {
            batch = batch.max(n.div_ceil(self.max_rounds.max(1)));
        }
        if self.cap_examples > 0 && m_c < self.cap_examples {
            let share = (m_c as f64 / self.cap_examples as f64).max(CAP_FLOOR);
            cap = cap.map(|c| c * share);
        }
        if self.few_examples > 0 && m_c < self.few_examples && cap.is_some() {
            let share = m_c as f64 / self.few_examples as f64;
            cap = cap.zip(self.max_weight).map(|(c, w)| c.min(w * share));
            batch = batch.max(4 * self.few_examples.div_ceil(m_c));
        }
        (batch, cap)
    }

    /// The defaults for bag data: every training instance a representative at three widths
    /// (6, 3 and 1.5 x narrower than the median heuristic), each width a space of its own:
    /// MILES' embedding (every instance a concept at several widths) under LPBoost's soft
    /// margin. Chosen at cross-validation seeds 3-12, which no earlier choice had seen:
    /// over nine bag sets 0.853 against 0.832 for 100 k-means++ seeds at one width (MUSK1
    /// 0.889 / 0.866, MUSK2 0.893 / 0.874; widths 4, 2, 1: 0.848; docs/VARIANTS.md). `table_budget` bounds the
    /// representatives at many bags (2,000 bags: 500). A softer margin (nu 0.2,
    /// chosen on MUSK1; the series' 0.1 measured 0.87 there). Threshold hypotheses stay out:
    /// MUSK1's 10-fold accuracy falls with them (0.84 against 0.90), its bags being few and
    /// their instance features already the signal. The DC loop stays off: one step cut to 6
    /// generation rounds (`dc_generation_rounds`) measured no better over three CV seeds on
    /// MUSK1, MUSK2 and MUSK1 on 9 features, at 4-10x the fit time (issue 26; README). The
    /// soft margin is the paper's common cap: on protein-like bags (193 of 16-42
    /// instances, 13 % positive) the balanced one fell below the majority decision (0.799
    /// against 0.875 over four draws, docs/VARIANTS.md).
    pub fn for_bags() -> Self {
        Self {
            nu: 0.2,
            k: None,
            table_budget: Some(BAG_TABLE_BUDGET),
            widths: Some(Widths {
                scales: vec![6.0, 3.0, 1.5],
                choice: WidthChoice::Spaces,
            }),
            threshold_hypotheses: false,
            max_weight: None,
            sub_fits: 1,
            // Measured on a 2,000-bag set (MUSK1's instances, 5 % positive): the same
            // accuracy at 1.8 x the fit time (docs/VARIANTS.md).
            columns_for_size: false,
            // The paper's common cap 1 / (nu m): the balanced one trades the majority's
            // bags for the minority's (see above).
            balanced: false,
            ..Self::default()
        }
    }

    /// The paper's model (Suehiro et al.): raw contiguous subsequences of 0.2 x the shortest
    /// series, every space's DC weak learner in every round.
    pub fn paper() -> Self {
        Self {
            kernel: KernelSpec::default(),
            lengths: vec![ShapeletLength::Fraction(0.2)],
            nu: 0.2,
            dc_max_iters: 10,
            spaces: SpaceParams::paper(),
            bias: false,
            mean_hypotheses: false,
            threshold_hypotheses: false,
            position_thresholds: false,
            pooled_head: false,
            sub_fits: 1,
            decision_folds: 0,
            k_shared_by_channels: false,
            threshold_share: 1.0,
            max_weight: None,
            balanced: false,
            columns_per_round: 2,
            columns_for_size: false,
            partial_pricing: None,
            ..Self::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(MilError::InvalidParameter(m));
        if !(self.nu > 0.0 && self.nu <= 1.0) {
            return bad(format!("nu must be in (0, 1], got {}", self.nu));
        }
        if self.sub_fits == 0 {
            return bad("sub_fits must be at least 1 (one fit)".to_string());
        }
        if let Some(c) = self.max_weight {
            if !(c > 0.0 && c <= 1.0) {
                return bad(format!("max_weight must be in (0, 1], got {c}"));
            }
        }
        if !(self.epsilon >= 0.0 && self.epsilon.is_finite()) {
            return bad(format!("epsilon must be >= 0, got {}", self.epsilon));
        }
        // dc_max_iters = 0: the weak learner returns its one-hot start (no DC step).
        if self.max_rounds == 0 || self.starts == 0 {
            return bad("max rounds and starts must be >= 1".into());
        }
        if self.dc_generation_rounds == Some(0) {
            return bad("DC generation rounds must be >= 1 (or all)".into());
        }
        if self.k == Some(0) {
            return bad("k must be >= 1 (or all)".into());
        }
        if self.stride == 0 {
            return bad("stride must be >= 1".into());
        }
        if let Some(p) = self.partial_pricing {
            if p.every == 0 || !(p.share > 0.0 && p.share <= 1.0) {
                return bad(format!(
                    "partial pricing needs a full pricing every >= 1 rounds and a share in (0, 1], got {} and {}",
                    p.every, p.share
                ));
            }
        }
        let sp = &self.spaces;
        if sp.views.is_empty() || sp.znorm.is_empty() || sp.dilations == 0 {
            return bad("spaces need a view, a normalisation and at least one dilation".into());
        }
        if sp.max_instances == Some(0) {
            return bad("max instances per space must be >= 1".into());
        }
        if let Some(w) = &self.widths {
            if w.scales.is_empty() || w.scales.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
                return bad(format!(
                    "width scales must be one or more numbers > 0, got {:?}",
                    w.scales
                ));
            }
            if let WidthChoice::InnerCv { folds } = w.choice {
                if folds < 2 {
                    return bad(format!(
                        "inner cross-validation needs >= 2 folds, got {folds}"
                    ));
                }
            }
        }
        if let KernelSpec::Gaussian { sigma, scale } = self.kernel {
            if sigma.is_some_and(|s| !(s > 0.0 && s.is_finite()))
                || !(scale > 0.0 && scale.is_finite())
            {
                return bad(format!(
                    "gaussian sigma and scale must be > 0, got {sigma:?} and {scale}"
                ));
            }
        }
        match self.kind {
            ModelKind::Lpboost => {}
            ModelKind::Miordm => self.miordm.validate()?,
            ModelKind::Misvm | ModelKind::MiSvm => self.svm.validate()?,
            ModelKind::Boxsvm => self.boxkernel.validate()?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_adds_enough_columns_for_the_round_limit_to_reach_n() {
        let series = FitParams::default();
        assert_eq!((series.columns_per_round, series.max_rounds), (2, 100));
        // Up to 2 x max_rounds training series: two a round, the model of before. A class
        // of fewer than 30 examples has its cap by its count (14 of 30: 0.05 x 14 / 30).
        let (batch, cap) = series.round_plan(28, 14);
        assert_eq!(batch, 2);
        assert!((cap.unwrap() - 0.05 * 14.0 / 30.0).abs() < 1e-15);
        assert_eq!(series.round_plan(200, 30), (2, Some(0.05)));
        // 500 series: five a round, so 100 rounds can place 500 columns.
        assert_eq!(series.round_plan(201, 40).0, 3);
        assert_eq!(series.round_plan(500, 50), (5, Some(0.05)));
        let limit = FitParams {
            max_rounds: 50,
            ..series.clone()
        };
        assert_eq!(limit.round_plan(500, 50).0, 10);
        // --fixed-columns, bags and the paper's form keep the count as given.
        let fixed = FitParams {
            columns_for_size: false,
            ..series.clone()
        };
        assert_eq!(fixed.round_plan(500, 50).0, 2);
        assert_eq!(FitParams::for_bags().round_plan(2000, 100), (2, None));
        assert_eq!(FitParams::paper().round_plan(2000, 100), (2, None));
        // A class of two examples among 500: the few-examples batch, the larger of the two
        // rules; the cap at the floor, below the few-examples rule's 2 / 3.
        let (batch, cap) = series.round_plan(500, 2);
        assert_eq!(batch, 8);
        assert!((cap.unwrap() - 0.05 * CAP_FLOOR).abs() < 1e-15);
        let few_only = FitParams {
            cap_examples: 0,
            ..series.clone()
        };
        let (_, cap) = few_only.round_plan(500, 2);
        assert!((cap.unwrap() - 0.05 * 2.0 / 3.0).abs() < 1e-15);
    }

    fn kinds(p: &SpaceParams) -> Vec<(View, bool)> {
        let mut k: Vec<(View, bool)> = p
            .extractions(&[9], 150, 1)
            .iter()
            .filter(|e| !e.is_level())
            .map(|e| (e.view, e.znorm))
            .collect();
        k.sort_by_key(|&(v, z)| (v.name(), z));
        k.dedup();
        k
    }

    /// The default takes the first difference z-normalised and the change over the dilation
    /// raw; either view alone takes both normalisations, and centred is raw only.
    #[test]
    fn each_view_takes_its_normalisations() {
        let d = SpaceParams::default();
        assert_eq!(
            kinds(&d),
            vec![
                (View::Diff, true),
                (View::Lag, false),
                (View::Raw, false),
                (View::Raw, true)
            ]
        );
        let lag = SpaceParams {
            views: vec![View::Lag, View::Centred],
            ..d.clone()
        };
        assert_eq!(
            kinds(&lag),
            vec![
                (View::Centred, false),
                (View::Lag, false),
                (View::Lag, true)
            ]
        );
        let diff = SpaceParams {
            views: vec![View::Diff],
            ..d
        };
        assert_eq!(kinds(&diff), vec![(View::Diff, false), (View::Diff, true)]);
    }

    /// A level space reads each channel once: after the subsequence spaces, once even
    /// when a length of 1 is asked for, over the block of all channels in a dependent
    /// model; none in the paper's form or with levels off.
    #[test]
    fn a_level_space_reads_each_channel_once() {
        let d = SpaceParams::default();
        let levels = |p: &SpaceParams, lengths: &[usize], channels: usize| -> Vec<Extraction> {
            p.extractions(lengths, 150, channels)
                .into_iter()
                .filter(Extraction::is_level)
                .collect()
        };
        assert_eq!(levels(&d, &[9], 1), vec![Extraction::level()]);
        assert_eq!(
            d.extractions(&[9], 150, 1).last(),
            Some(&Extraction::level())
        );
        assert_eq!(levels(&d, &[9, 1], 1), vec![Extraction::level()]);
        let channels: Vec<usize> = levels(&d, &[9], 3).iter().map(|e| e.channel).collect();
        assert_eq!(channels, vec![0, 1, 2]);
        let dependent = SpaceParams {
            channels: ChannelMode::Dependent,
            ..d.clone()
        };
        assert_eq!(
            levels(&dependent, &[9], 3),
            vec![Extraction {
                block: 3,
                ..Extraction::level()
            }]
        );
        assert!(levels(&SpaceParams::paper(), &[9], 3).is_empty());
        let off = SpaceParams { levels: false, ..d };
        assert!(levels(&off, &[9], 3).is_empty());
    }
}
