//! The model API (`fit` / `predict` / `explain`), its parameters, and the versioned artifact.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::bag::{Dataset, Sample};
use super::error::{MilError, Result};
pub use super::shapelet::ShapeletModel;
pub use super::weak::WeakKind;

/// Artifact format tag and version; loading refuses anything else.
pub const ARTIFACT_FORMAT: &str = "milstream-model";
pub const ARTIFACT_VERSION: u32 = 1;

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

/// Hyperparameters of a fit. `Default` is the documented default of the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitParams {
    pub kernel: KernelSpec,
    /// Shapelet lengths (series only); several form one union hypothesis class.
    pub lengths: Vec<ShapeletLength>,
    /// Subsequence stride used for training (prediction always uses every subsequence).
    pub stride: usize,
    /// Representatives per space (k-means++); None = every instance.
    pub k: Option<usize>,
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
    pub seed: u64,
    /// z-score bag features with the training mean and deviation (bags only; series are
    /// taken as they come, as the UCR archive's are already normalised).
    #[serde(default = "default_true")]
    pub standardize: bool,
}

fn default_one() -> usize {
    1
}

fn default_true() -> bool {
    true
}

impl Default for FitParams {
    fn default() -> Self {
        Self {
            kernel: KernelSpec::default(),
            lengths: vec![ShapeletLength::Fraction(0.2)],
            stride: 1,
            k: Some(100),
            nu: 0.2,
            epsilon: 1e-4,
            max_rounds: 100,
            weak: WeakKind::Op2,
            binary: BinaryMode::Symmetric,
            dc_max_iters: 10,
            starts: 1,
            seed: 0,
            standardize: true,
        }
    }
}

impl FitParams {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(MilError::InvalidParameter(m));
        if !(self.nu > 0.0 && self.nu <= 1.0) {
            return bad(format!("nu must be in (0, 1], got {}", self.nu));
        }
        if !(self.epsilon >= 0.0 && self.epsilon.is_finite()) {
            return bad(format!("epsilon must be >= 0, got {}", self.epsilon));
        }
        if self.max_rounds == 0 || self.dc_max_iters == 0 || self.starts == 0 {
            return bad("max rounds, DC iterations and starts must be >= 1".into());
        }
        if self.k == Some(0) {
            return bad("k must be >= 1 (or all)".into());
        }
        if self.stride == 0 {
            return bad("stride must be >= 1".into());
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
        Ok(())
    }
}

/// A bag's prediction: the label, and a score g per class (aligned with `Model::classes`);
/// the label is the class with the largest score. A single binary ensemble g reports
/// (-g, g).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub label: String,
    pub class_index: usize,
    pub scores: Vec<f64>,
}

/// One hypothesis's share of a prediction (the paper's Figure 1(a)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contribution {
    /// The class this hypothesis votes for when its contribution is positive.
    pub class: String,
    pub hypothesis: usize,
    /// Shapelet (subsequence) length of its space.
    pub length: usize,
    /// The maximising instance: for a series, the subsequence's start offset.
    pub offset: usize,
    /// h_j(B) = max_x sum_z alpha_z K(z, x).
    pub similarity: f64,
    pub weight: f64,
    /// w_j h_j(B).
    pub contribution: f64,
}

/// A prediction with its contributions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub prediction: Prediction,
    pub contributions: Vec<Contribution>,
}

/// A trained model of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Model {
    /// LPBoost over kernelized shapelets (Suehiro et al.).
    LpboostShapelet(ShapeletModel),
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

impl Model {
    pub fn fit(ds: &Dataset, params: &FitParams) -> Result<Self> {
        Ok(Model::LpboostShapelet(ShapeletModel::fit(ds, params)?))
    }

    pub fn predict(&self, sample: &Sample) -> Result<Prediction> {
        match self {
            Model::LpboostShapelet(m) => m.predict(sample),
        }
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
        }
    }

    pub fn classes(&self) -> &[String] {
        match self {
            Model::LpboostShapelet(m) => &m.classes,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Model::LpboostShapelet(_) => "lpboost_shapelet",
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
        }
        Ok(art.model)
    }
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
