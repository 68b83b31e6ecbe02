//! What a model says about a bag: the prediction and each hypothesis's share of it.

use serde::{Deserialize, Serialize};

use super::space::View;

fn default_one() -> usize {
    1
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
    /// The class this hypothesis votes for when its contribution is positive (with a pooled
    /// head: the predicted class, whose score every hypothesis adds to).
    pub class: String,
    /// Its index in its class's ensemble (with a pooled head: in model order, every
    /// class's hypotheses ensemble by ensemble).
    pub hypothesis: usize,
    /// Shapelet (subsequence) length of its space.
    pub length: usize,
    /// The maximising instance: for a series, the subsequence's start offset.
    pub offset: usize,
    /// Its space's dilation: the subsequence takes every `dilation`-th point from `offset`.
    #[serde(default = "default_one")]
    pub dilation: usize,
    /// Its space's view (the series or its first difference) and normalisation.
    #[serde(default)]
    pub view: View,
    #[serde(default)]
    pub znorm: bool,
    /// The channel its space reads (0 for univariate series and dependent spaces).
    #[serde(default, skip_serializing_if = "super::space::is_zero")]
    pub channel: usize,
    /// A dependent space's channel count (0: one channel).
    #[serde(default, skip_serializing_if = "super::space::is_zero")]
    pub block: usize,
    /// A z space's unit exponent (see `Extraction::unit_exp`), to read the subsequence again.
    #[serde(default, skip_serializing_if = "super::space::is_default")]
    pub unit_exp: i32,
    /// h_j(B) = max_x sum_z alpha_z K(z, x).
    pub similarity: f64,
    pub weight: f64,
    /// h_j's mean over the model's training set: the baseline this bag is read against (0
    /// in older artifacts and for kinds without one; `findings/baseline.rs`).
    #[serde(default, skip_serializing_if = "super::space::is_default")]
    pub baseline: f64,
    /// w_j (h_j(B) - baseline): what this bag adds to the score beyond the training set's
    /// average bag (the average joins the bias).
    pub contribution: f64,
    /// What the hypothesis asserts (absent: `match`, the paper's max similarity).
    #[serde(default, skip_serializing_if = "Asserts::is_match")]
    pub asserts: Asserts,
}

/// What a hypothesis asserts about a bag, for people reading an explanation.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Asserts {
    /// Its best-matching subsequence is this similar to the pattern (Theorem 1's max).
    #[default]
    Match,
    /// The pattern occurs this often: the mean similarity over the bag's subsequences.
    Mean,
    /// Some subsequence (`mean`: the average one) is at least (`above`) or below `at`
    /// similar to the pattern; the output is 1 when it holds.
    Threshold { at: f64, above: bool, mean: bool },
    /// The pattern's best match lies at or after (`above`) or before the share `at` of the
    /// bag's subsequences; the output is 1 when it holds.
    Position { at: f64, above: bool },
}

impl Asserts {
    pub fn is_match(&self) -> bool {
        *self == Asserts::Match
    }
}

/// A prediction with its contributions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub prediction: Prediction,
    pub contributions: Vec<Contribution>,
}

/// How much of the decision margin an explanation's top findings carry, over a set of
/// samples (the training set, recorded when a model is trained): quartiles of the share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShownShares {
    /// Findings shown (`explain --top`).
    pub top: usize,
    /// Samples measured.
    pub n: usize,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
}
