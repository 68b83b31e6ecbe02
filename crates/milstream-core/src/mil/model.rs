//! The model API (`fit` / `predict` / `explain`), its parameters, and the versioned artifact.

use serde::{Deserialize, Serialize};

use super::bag::{Bag, Dataset, Sample};
use super::error::{MilError, Result};
pub use super::kinds::boxsvm::BoxSvmModel;
pub use super::kinds::miordm::MiordmModel;
pub use super::kinds::svm::{MiSvmModel, MiSvmVariant};
pub use super::params::{
    BinaryMode, BoxKernelParams, ChannelMode, Extraction, FitParams, KernelSpec, MiordmParams,
    ModelKind, ShapeletLength, SpaceParams, SvmParams, View, WeakKind, WidthChoice, Widths,
};
pub use super::prediction::{Contribution, Explanation, Prediction};
pub use super::shapelet::ShapeletModel;

/// Artifact format tag and version; loading refuses anything else.
pub const ARTIFACT_FORMAT: &str = "milstream-model";
pub const ARTIFACT_VERSION: u32 = 1;

/// How a series becomes a bag for the kinds that take bags: its subsequences of `length`
/// at `stride` (the shapelet model handles series itself). A multichannel series gives
/// instances of `channels` x `length` values: each channel's subsequence over the same
/// steps, channel by channel (issue 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesBagging {
    pub length: usize,
    pub stride: usize,
    /// Channels of a multichannel series (0: univariate; absent in older artifacts).
    #[serde(default, skip_serializing_if = "super::space::is_zero")]
    pub channels: usize,
}

impl SeriesBagging {
    pub fn bag(&self, series: &[f64]) -> Result<Bag> {
        super::space::series::subsequence_bag(series, self.length, self.stride)
    }

    /// The bag of a series sample: univariate or of the model's channel count.
    pub fn sample_bag(&self, sample: &Sample) -> Result<Bag> {
        match sample {
            Sample::Series(v) if self.channels == 0 => self.bag(v),
            Sample::Multi(c) if c.len() == self.channels => {
                let per: Vec<Bag> = c.iter().map(|v| self.bag(v)).collect::<Result<_>>()?;
                let n = per.iter().map(Bag::len).min().unwrap_or(0);
                let mut data = Vec::with_capacity(n * self.length * c.len());
                for j in 0..n {
                    for b in &per {
                        data.extend_from_slice(b.instance(j));
                    }
                }
                Bag::new(self.length * c.len(), data)
            }
            Sample::Series(_) | Sample::Multi(_) => Err(MilError::InvalidData(format!(
                "the model takes series of {} channel(s), got {}",
                self.channels.max(1),
                match sample {
                    Sample::Multi(c) => c.len(),
                    _ => 1,
                }
            ))),
            Sample::Bag(_) => Err(MilError::InvalidData(
                "this model scores series, got a bag".into(),
            )),
        }
    }
}

/// A model of a bag kind with what every kind keeps beside it: how series are bagged, the
/// parameters it was fit with (retraining reuses them) and a training summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BagModel<M> {
    /// None for bag data.
    pub series: Option<SeriesBagging>,
    pub params: FitParams,
    pub n_train: usize,
    pub train_seconds: f64,
    pub model: Machines<M>,
}

/// The binary machines of a bag kind: one for two classes, or one per class against the
/// rest for more, as LPBoost does (Suehiro et al., footnote 3), so every kind gives a score
/// per class. Untagged: an artifact written before one-vs-rest holds the binary machine
/// itself here and still loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Machines<M> {
    /// Two classes; the machine's second class is the positive one.
    Binary(M),
    /// Machine c separates `classes[c]` (its positive class) from the rest.
    OneVsRest {
        classes: Vec<String>,
        machines: Vec<M>,
    },
}

impl<M> Machines<M> {
    /// Every machine: one, or one per class.
    pub fn all(&self) -> &[M] {
        match self {
            Machines::Binary(m) => std::slice::from_ref(m),
            Machines::OneVsRest { machines, .. } => machines,
        }
    }

    /// The machine of a two-class model; None for one-vs-rest.
    pub fn binary(&self) -> Option<&M> {
        match self {
            Machines::Binary(m) => Some(m),
            Machines::OneVsRest { .. } => None,
        }
    }
}

/// The label a one-vs-rest machine sees: "1" for its class, "0" for the rest (sorted, so
/// the machine's positive class is its own).
fn one_vs_rest_labels(labels: &[String], class: &str) -> Vec<String> {
    labels
        .iter()
        .map(|l| if l == class { "1" } else { "0" }.to_string())
        .collect()
}

/// Fits `fit` once for two classes, or once per class against the rest for more.
fn fit_machines<M>(
    ds: &Dataset,
    mut fit: impl FnMut(&Dataset) -> Result<M>,
) -> Result<Machines<M>> {
    let classes = ds.classes();
    if classes.len() <= 2 {
        return fit(ds).map(Machines::Binary);
    }
    let machines = classes
        .iter()
        .map(|c| {
            let relabelled = Dataset {
                labels: one_vs_rest_labels(&ds.labels, c),
                ..ds.clone()
            };
            fit(&relabelled)
        })
        .collect::<Result<_>>()?;
    Ok(Machines::OneVsRest { classes, machines })
}

/// A binary machine of a bag kind: a decision f(B), positive for its second class, and the
/// contributions that explain it.
pub trait BinaryMachine {
    fn binary_classes(&self) -> &[String; 2];
    fn dim(&self) -> usize;
    fn check(&self) -> Result<()>;
    /// f(B) and its contributions, each naming `class`; `place` turns an instance index into
    /// its (offset, length) in the sample.
    fn decide(
        &self,
        bag: &Bag,
        class: &str,
        place: &dyn Fn(usize) -> (usize, usize),
    ) -> Result<(f64, Vec<Contribution>)>;
    /// Alternation rounds run, and whether they settled (one round for a single QP).
    fn rounds(&self) -> (usize, bool);
}

/// MIORDM and the MI-SVMs score each instance; a bag scores its witness's (largest)
/// instance score, and the explanation is that witness: which subsequence (or instance)
/// decided the bag. They keep the same fields under the same names.
macro_rules! instance_machine {
    ($model:ty) => {
        impl BinaryMachine for $model {
            fn binary_classes(&self) -> &[String; 2] {
                &self.classes
            }
            fn dim(&self) -> usize {
                self.dim
            }
            fn check(&self) -> Result<()> {
                self.validate()
            }
            fn decide(
                &self,
                bag: &Bag,
                class: &str,
                place: &dyn Fn(usize) -> (usize, usize),
            ) -> Result<(f64, Vec<Contribution>)> {
                let scores = self.instance_scores(bag);
                let w = super::kinds::svm::argmax(&scores);
                let f = scores[w];
                let (offset, length) = place(w);
                let c = Contribution {
                    class: class.to_string(),
                    hypothesis: 0,
                    length,
                    offset,
                    dilation: 1,
                    view: View::Raw,
                    znorm: false,
                    channel: 0,
                    block: 0,
                    unit_exp: 0,
                    similarity: f,
                    weight: 1.0,
                    baseline: 0.0,
                    contribution: f,
                    asserts: Default::default(),
                };
                Ok((f, vec![c]))
            }
            fn rounds(&self) -> (usize, bool) {
                (self.rounds, self.converged)
            }
        }
    };
}

instance_machine!(MiordmModel);
instance_machine!(MiSvmModel);

impl BinaryMachine for BoxSvmModel {
    fn binary_classes(&self) -> &[String; 2] {
        &self.classes
    }
    fn dim(&self) -> usize {
        BoxSvmModel::dim(self)
    }
    fn check(&self) -> Result<()> {
        self.validate()
    }
    /// The decision w . phi(B) + b as one contribution per reference bag of the empirical
    /// map (w_j phi_j(B)), largest |contribution| first; they sum with the bias to f.
    fn decide(
        &self,
        bag: &Bag,
        class: &str,
        place: &dyn Fn(usize) -> (usize, usize),
    ) -> Result<(f64, Vec<Contribution>)> {
        let (f, terms) = self.decision(bag)?;
        let (_, length) = place(0);
        let mut contributions: Vec<Contribution> = terms
            .iter()
            .enumerate()
            .map(|(j, &t)| Contribution {
                class: class.to_string(),
                hypothesis: j,
                length,
                offset: 0,
                dilation: 1,
                view: View::Raw,
                znorm: false,
                channel: 0,
                block: 0,
                unit_exp: 0,
                similarity: if self.weights[j] != 0.0 {
                    t / self.weights[j]
                } else {
                    0.0
                },
                weight: self.weights[j],
                baseline: 0.0,
                contribution: t,
                asserts: Default::default(),
            })
            .collect();
        contributions.sort_by(|a, b| b.contribution.abs().total_cmp(&a.contribution.abs()));
        Ok((f, contributions))
    }
    fn rounds(&self) -> (usize, bool) {
        (1, true)
    }
}

impl<M: BinaryMachine> BagModel<M> {
    /// The sample as a bag of the model's instance dimension.
    fn to_bag<'a>(&self, sample: &'a Sample) -> Result<std::borrow::Cow<'a, Bag>> {
        let dim = self.dim();
        let bag = match (sample, &self.series) {
            (Sample::Bag(b), None) => Ok(std::borrow::Cow::Borrowed(b)),
            (_, Some(sb)) => Ok(std::borrow::Cow::Owned(sb.sample_bag(sample)?)),
            (Sample::Series(_) | Sample::Multi(_), None) => Err(MilError::InvalidData(
                "this model scores bags, got a series".into(),
            )),
        }?;
        if bag.dim() != dim {
            return Err(MilError::InvalidData(format!(
                "instances of dimension {} do not match the model's {dim}",
                bag.dim()
            )));
        }
        Ok(bag)
    }

    /// The instance dimension (every machine shares it: they saw the same bags).
    pub fn dim(&self) -> usize {
        self.model.all()[0].dim()
    }

    pub fn classes(&self) -> &[String] {
        match &self.model {
            Machines::Binary(m) => m.binary_classes(),
            Machines::OneVsRest { classes, .. } => classes,
        }
    }

    /// Two classes: scores (-f, f) for (negative, positive), the label by the sign of f.
    /// More: score c is machine c's f_c, the label the class of the largest, explained by
    /// that class's machine.
    fn explain(&self, sample: &Sample) -> Result<Explanation> {
        let bag = self.to_bag(sample)?;
        // A series instance starts at instance * stride; a bag instance is its index.
        let place = |i: usize| self.series.map_or((i, 1), |s| (i * s.stride, s.length));
        // A multichannel instance's channel count (0: one channel), as a contribution's block.
        let block = self.series.map_or(0, |s| s.channels);
        let mut explanation = match &self.model {
            Machines::Binary(m) => {
                let classes = m.binary_classes();
                let (f, contributions) = m.decide(&bag, &classes[1], &place)?;
                let class_index = usize::from(f > 0.0);
                Explanation {
                    prediction: Prediction {
                        label: classes[class_index].clone(),
                        class_index,
                        scores: vec![-f, f],
                    },
                    contributions,
                }
            }
            Machines::OneVsRest { classes, machines } => {
                let mut scores = Vec::with_capacity(machines.len());
                let mut explained = Vec::with_capacity(machines.len());
                for (m, c) in machines.iter().zip(classes) {
                    let (f, contributions) = m.decide(&bag, c, &place)?;
                    scores.push(f);
                    explained.push(contributions);
                }
                let class_index = super::kinds::svm::argmax(&scores);
                Explanation {
                    prediction: Prediction {
                        label: classes[class_index].clone(),
                        class_index,
                        scores,
                    },
                    contributions: explained.swap_remove(class_index),
                }
            }
        };
        for c in &mut explanation.contributions {
            c.block = block;
        }
        Ok(explanation)
    }

    /// Shapes: the machines, their classes and dimension agree.
    fn check(&self) -> Result<()> {
        for m in self.model.all() {
            m.check()?;
        }
        if let Machines::OneVsRest { classes, machines } = &self.model {
            let bad = |why: String| Err(MilError::Artifact(why));
            if classes.len() < 3 || classes.len() != machines.len() {
                return bad(format!(
                    "one-vs-rest needs one machine per class and at least three classes; \
                     has {} classes and {} machines",
                    classes.len(),
                    machines.len()
                ));
            }
            if machines.iter().any(|m| m.dim() != machines[0].dim()) {
                return bad("one-vs-rest machines of different dimensions".into());
            }
        }
        Ok(())
    }

    fn summary(&self) -> ModelSummary {
        let machines = self.model.all();
        let rounds = machines.iter().map(|m| m.rounds().0).sum();
        let converged = machines.iter().all(|m| m.rounds().1);
        ModelSummary {
            n_train: self.n_train,
            train_seconds: self.train_seconds,
            rounds,
            rho: None,
            sparsity: None,
            converged: Some(converged),
        }
    }
}

/// A trained model of any kind.
// The shapelet model is the largest variant by a few hundred bytes: a process holds a
// handful of models (each serving one behind an Arc), never arrays of them, so a box would
// buy nothing and cost every match an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Model {
    /// LPBoost over kernelized shapelets (Suehiro et al.).
    LpboostShapelet(ShapeletModel),
    /// MIORDM (Luan et al.).
    Miordm(BagModel<MiordmModel>),
    /// MI-SVM or mi-SVM (Andrews et al.), by the model's `variant`.
    #[serde(rename = "misvm")]
    MiSvm(BagModel<MiSvmModel>),
    /// The box-counting kernel SVM (Tao et al.).
    #[serde(rename = "boxsvm")]
    BoxSvm(BagModel<BoxSvmModel>),
}

#[derive(Serialize, Deserialize)]
struct Artifact<M> {
    format: String,
    version: u32,
    model: M,
}

#[derive(Deserialize)]
struct ArtifactHeader {
    format: Option<String>,
    version: Option<u32>,
}

/// Subsequences a bag kind reads from a training set's series at most, all series together,
/// and from one series. Its fit grows with the square of its instances, and the box kernel
/// with the product of two bags' sizes (four series of 60,000 points, 240,000 subsequences
/// at stride 1, took MIORDM and MI-SVM past 24 GB; bags of 1,000 kept boxsvm past 5
/// minutes), so a longer set is bagged at the smallest stride past `--stride` that keeps it
/// within both, in training and prediction alike (the model keeps its stride).
pub const MAX_BAGGED_SUBSEQUENCES: (usize, usize) = (4_096, 256);

/// The stride a bag kind reads `ds`'s series at: `stride`, or the smallest larger one whose
/// subsequences of `length` number at most [`MAX_BAGGED_SUBSEQUENCES`] (a series gives at
/// least one; at one each, the series' longest length).
fn bagging_stride(ds: &Dataset, length: usize, stride: usize) -> usize {
    let (most, most_per_series) = MAX_BAGGED_SUBSEQUENCES;
    let within = |s: usize| -> bool {
        let counts = ds.samples.iter().map(|x| {
            super::space::series::n_subsequences(x.series_len().unwrap_or(0), length, s).max(1)
        });
        counts.clone().max().unwrap_or(0) <= most_per_series && counts.sum::<usize>() <= most
    };
    let stride = stride.max(1);
    if within(stride) {
        return stride;
    }
    // Both counts fall as the stride grows: the first stride within, by bisection.
    let (mut lo, mut hi) = (stride, ds.max_series_len().unwrap_or(1).max(stride + 1));
    if !within(hi) {
        return hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if within(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Bags of the samples for a bag kind, and how series were bagged (None for bag data).
fn bag_dataset(ds: &Dataset, p: &FitParams) -> Result<(Dataset, Option<SeriesBagging>)> {
    let channels = match ds.check_trainable()? {
        super::InputKind::Bag { .. } => return Ok((ds.clone(), None)),
        super::InputKind::Multi { channels } => channels,
        super::InputKind::Series => 0,
    };
    let min_len = ds.min_series_len().unwrap_or(0);
    let max_len = ds.max_series_len().unwrap_or(0);
    let length =
        super::shapelet::resolve_lengths(&p.lengths[..1.min(p.lengths.len())], min_len, max_len)?
            [0];
    let sb = SeriesBagging {
        length,
        stride: bagging_stride(ds, length, p.stride),
        channels,
    };
    let samples = ds
        .samples
        .iter()
        .map(|s| sb.sample_bag(s).map(Sample::Bag))
        .collect::<Result<_>>()?;
    Ok((
        Dataset {
            ids: ds.ids.clone(),
            samples,
            labels: ds.labels.clone(),
            channels: ds.channels.clone(),
        },
        Some(sb),
    ))
}

impl Model {
    pub fn fit(ds: &Dataset, params: &FitParams) -> Result<Self> {
        Self::fit_with_unlabeled(ds, params, &[])
    }

    /// A fit that may also see unlabeled samples: the box-counting kernel's transductive
    /// empirical map takes them as reference bags; every other kind ignores them.
    pub fn fit_with_unlabeled(
        ds: &Dataset,
        params: &FitParams,
        unlabeled: &[Sample],
    ) -> Result<Self> {
        params.validate()?;
        if params.kind == ModelKind::Lpboost {
            return Ok(Model::LpboostShapelet(ShapeletModel::fit(ds, params)?));
        }
        let t = std::time::Instant::now();
        let (bags, series) = bag_dataset(ds, params)?;
        fn wrap<M>(
            model: Machines<M>,
            series: Option<SeriesBagging>,
            params: &FitParams,
            n_train: usize,
            t: std::time::Instant,
        ) -> BagModel<M> {
            BagModel {
                series,
                params: params.clone(),
                n_train,
                train_seconds: t.elapsed().as_secs_f64(),
                model,
            }
        }
        let n = ds.len();
        Ok(match params.kind {
            ModelKind::Lpboost => unreachable!("handled above"),
            ModelKind::Miordm => Model::Miordm(wrap(
                fit_machines(&bags, |d| MiordmModel::fit(d, &params.miordm))?,
                series,
                params,
                n,
                t,
            )),
            ModelKind::Misvm => Model::MiSvm(wrap(
                fit_machines(&bags, |d| {
                    MiSvmModel::fit(d, &params.svm, MiSvmVariant::Bag)
                })?,
                series,
                params,
                n,
                t,
            )),
            ModelKind::MiSvm => Model::MiSvm(wrap(
                fit_machines(&bags, |d| {
                    MiSvmModel::fit(d, &params.svm, MiSvmVariant::Instance)
                })?,
                series,
                params,
                n,
                t,
            )),
            ModelKind::Boxsvm => {
                let extra: Vec<Bag> = if params.boxkernel.transductive {
                    unlabeled
                        .iter()
                        .map(|s| match (s, &series) {
                            (Sample::Series(_) | Sample::Multi(_), Some(sb)) => sb.sample_bag(s),
                            (Sample::Bag(b), None) => Ok(b.clone()),
                            _ => Err(MilError::InvalidData(
                                "unlabeled samples must be of the training data's kind".into(),
                            )),
                        })
                        .collect::<Result<_>>()?
                } else {
                    Vec::new()
                };
                let extra: Vec<&Bag> = extra.iter().collect();
                Model::BoxSvm(wrap(
                    fit_machines(&bags, |d| {
                        BoxSvmModel::fit(d, &extra, &params.boxkernel, params.seed)
                    })?,
                    series,
                    params,
                    n,
                    t,
                ))
            }
        })
    }

    pub fn predict(&self, sample: &Sample) -> Result<Prediction> {
        match self {
            Model::LpboostShapelet(m) => m.predict(sample),
            _ => Ok(self.explain(sample)?.prediction),
        }
    }

    /// Class probabilities of a prediction this model made (aligned with `classes`): a
    /// shapelet model's calibrated softmax(a s) (`calibration.rs`), else (older artifacts,
    /// the other kinds) the softmax of the scores.
    pub fn probabilities(&self, prediction: &Prediction) -> Vec<f64> {
        let calibration = match self {
            Model::LpboostShapelet(m) => m.calibration.as_ref(),
            _ => None,
        };
        super::calibration::probabilities(calibration, &prediction.scores)
    }

    /// `predict` and its class probabilities.
    pub fn predict_proba(&self, sample: &Sample) -> Result<(Prediction, Vec<f64>)> {
        let prediction = self.predict(sample)?;
        let p = self.probabilities(&prediction);
        Ok((prediction, p))
    }

    pub fn explain(&self, sample: &Sample) -> Result<Explanation> {
        match self {
            Model::LpboostShapelet(m) => {
                let (prediction, contributions) = m.explain(sample)?;
                Ok(Explanation {
                    prediction,
                    contributions,
                })
            }
            Model::Miordm(m) => m.explain(sample),
            Model::MiSvm(m) => m.explain(sample),
            Model::BoxSvm(m) => m.explain(sample),
        }
    }

    pub fn classes(&self) -> &[String] {
        match self {
            Model::LpboostShapelet(m) => &m.classes,
            Model::Miordm(m) => m.classes(),
            Model::MiSvm(m) => m.classes(),
            Model::BoxSvm(m) => m.classes(),
        }
    }

    /// Channel names of a multichannel model, from its training header (empty: unnamed,
    /// or a kind that keeps none).
    pub fn channel_names(&self) -> &[String] {
        match self {
            Model::LpboostShapelet(m) => &m.channel_names,
            _ => &[],
        }
    }

    /// The parameters the model was fit with (a retrain reuses them).
    pub fn params(&self) -> &FitParams {
        match self {
            Model::LpboostShapelet(m) => &m.params,
            Model::Miordm(m) => &m.params,
            Model::MiSvm(m) => &m.params,
            Model::BoxSvm(m) => &m.params,
        }
    }

    pub fn kind(&self) -> ModelKind {
        match self {
            Model::LpboostShapelet(_) => ModelKind::Lpboost,
            Model::Miordm(_) => ModelKind::Miordm,
            Model::MiSvm(m) => match m.model.all()[0].variant {
                MiSvmVariant::Bag => ModelKind::Misvm,
                MiSvmVariant::Instance => ModelKind::MiSvm,
            },
            Model::BoxSvm(_) => ModelKind::Boxsvm,
        }
    }

    /// What the model takes: series or bags of a dimension.
    pub fn input(&self) -> super::InputKind {
        match self {
            Model::LpboostShapelet(m) => m.input,
            Model::Miordm(m) => bag_input(m.series, m.dim()),
            Model::MiSvm(m) => bag_input(m.series, m.dim()),
            Model::BoxSvm(m) => bag_input(m.series, m.dim()),
        }
    }

    /// The kind's one name everywhere a user reads it: `--kind`, `kind =`, cards, metrics and
    /// prediction rows (`lpboost`, `miordm`, ...). The artifact's own tag is separate.
    pub fn kind_name(&self) -> &'static str {
        self.kind().name()
    }

    /// Training summary shared by every kind: examples, seconds, rounds (boosting rounds or
    /// alternation rounds) and, for LPBoost, the margin and sparsity.
    pub fn summary(&self) -> ModelSummary {
        match self {
            Model::LpboostShapelet(m) => ModelSummary {
                n_train: m.summary.n_train,
                train_seconds: m.summary.train_seconds,
                rounds: m.summary.rounds,
                rho: Some(m.summary.rho),
                sparsity: Some(m.summary.sparsity),
                converged: None,
            },
            Model::Miordm(m) => m.summary(),
            Model::MiSvm(m) => m.summary(),
            // The support bags over every machine's training bags.
            Model::BoxSvm(m) => ModelSummary {
                rounds: m.model.all().len(),
                sparsity: Some(
                    m.model.all().iter().map(|b| b.n_support).sum::<usize>() as f64
                        / (m.n_train * m.model.all().len()).max(1) as f64,
                ),
                converged: None,
                ..m.summary()
            },
        }
    }

    /// The JSON artifact.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&Artifact {
            format: ARTIFACT_FORMAT.into(),
            version: ARTIFACT_VERSION,
            model: self,
        })
        .expect("a model always serialises: it holds only finite numbers and strings")
    }

    /// Parses and checks an artifact: format, version, then shapes.
    pub fn from_json(text: &str) -> Result<Self> {
        let header: ArtifactHeader = serde_json::from_str(text)
            .map_err(|e| MilError::Artifact(format!("not a JSON object: {e}")))?;
        if header.format.as_deref() != Some(ARTIFACT_FORMAT) {
            return Err(MilError::Artifact(format!(
                "format is {:?}, expected \"{ARTIFACT_FORMAT}\"",
                header.format
            )));
        }
        if header.version != Some(ARTIFACT_VERSION) {
            return Err(MilError::Artifact(format!(
                "version {:?} is not supported (this build reads version {ARTIFACT_VERSION})",
                header.version
            )));
        }
        let art: Artifact<Model> =
            serde_json::from_str(text).map_err(|e| MilError::Artifact(e.to_string()))?;
        match &art.model {
            Model::LpboostShapelet(m) => m.validate()?,
            Model::Miordm(m) => m.check()?,
            Model::MiSvm(m) => m.check()?,
            Model::BoxSvm(m) => m.check()?,
        }
        Ok(art.model)
    }
}

fn bag_input(series: Option<SeriesBagging>, dim: usize) -> super::InputKind {
    match series {
        Some(sb) if sb.channels > 0 => super::InputKind::Multi {
            channels: sb.channels,
        },
        Some(_) => super::InputKind::Series,
        None => super::InputKind::Bag { dim },
    }
}

/// The parts of a training summary every kind has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSummary {
    pub n_train: usize,
    pub train_seconds: f64,
    pub rounds: usize,
    pub rho: Option<f64>,
    pub sparsity: Option<f64>,
    pub converged: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapelet_length_parses() {
        assert_eq!(
            "45".parse::<ShapeletLength>().unwrap(),
            ShapeletLength::Absolute(45)
        );
        assert_eq!(
            "0.25".parse::<ShapeletLength>().unwrap(),
            ShapeletLength::Fraction(0.25)
        );
        assert!("1.5".parse::<ShapeletLength>().is_err());
        assert!("0".parse::<ShapeletLength>().is_err());
        assert!("abc".parse::<ShapeletLength>().is_err());
    }

    #[test]
    fn artifact_header_is_checked() {
        let e = Model::from_json(r#"{"format":"other","version":1,"model":{}}"#).unwrap_err();
        assert!(e.to_string().contains("format"), "{e}");
        let e = Model::from_json(r#"{"format":"milstream-model","version":99,"model":{}}"#)
            .unwrap_err();
        assert!(e.to_string().contains("version Some(99)"), "{e}");
    }
}
