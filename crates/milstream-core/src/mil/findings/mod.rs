//! What an explanation says: its hypotheses grouped into findings by the positions their
//! maximising subsequence covers, signed towards the class the explanation is read for (the
//! second of two classes, else the predicted class against the runner-up), each with what
//! it asserts in words. The figure draws them and the daemon's prediction rows carry them;
//! what they mean lives here, beside the model.

use serde::Serialize;

mod baseline;
mod group;
mod shares;

pub use baseline::baseline;

pub use group::{extraction, findings_of, space_name, FindingKey};
pub use shares::{quartiles, record_shown_shares, shown_shares, TOP_FINDINGS};

use crate::mil::prediction::{Asserts, Contribution, Explanation, Prediction};
use crate::mil::shapelet::ShapeletModel;

/// Hypotheses whose maximising subsequences cover about the same positions: one thing the figure
/// says about the sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What it asserts, in words, as the legend and `explain --out` print it (its
    /// strongest hypothesis's assertion, and how many more it groups).
    pub text: String,
    /// The summed contribution, signed towards the positive class.
    pub value: f64,
    /// What its strongest hypothesis asserts: `match`, `mean`, `threshold`, `position`.
    pub asserts: Asserts,
    /// A threshold's or position's verdict: does the assertion hold (None otherwise).
    pub verdict: Option<bool>,
    /// A position's band: the series positions (first, last) its best match is asserted
    /// to lie in (None otherwise, and for bags).
    pub band: Option<(usize, usize)>,
    /// The first channel it is drawn on and how many (more than one: a dependent space).
    pub channel: usize,
    pub channels: usize,
    /// Series positions covered, first and last (for a bag: the instance, twice).
    pub start: usize,
    pub end: usize,
    /// Its hypotheses, as (class, hypothesis) in `maximizers` and `patterns`.
    pub hypotheses: Vec<(String, usize)>,
    /// The spaces they read, e.g. `raw d1 z`, `diff d4`.
    pub spaces: Vec<String>,
}

/// The findings not shown: how many hypotheses and their summed contribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Other {
    pub hypotheses: usize,
    pub value: f64,
}

/// Which class is warm (`pos`), which cool (`neg`), and the score that decides between
/// them: with two classes the second against the first, with more the predicted class
/// against the runner-up; a single binary ensemble's score is its g.
pub struct Orientation {
    pub pos: usize,
    pub neg: usize,
    pub score: f64,
}

pub fn orientation(model: &ShapeletModel, prediction: &Prediction) -> Orientation {
    let classes = &model.classes;
    let (pos, neg) = if classes.len() == 2 {
        (1, 0)
    } else {
        let p = prediction.class_index;
        let runner_up = (0..classes.len())
            .filter(|&c| c != p)
            .max_by(|&a, &b| prediction.scores[a].total_cmp(&prediction.scores[b]))
            .expect("a model has at least two classes (validated on load)");
        (p, runner_up)
    };
    let score = if model.ensembles.len() == 1 {
        // A single ensemble reports (-g, g); g is the decision value.
        prediction.scores[1]
    } else {
        prediction.scores[pos] - prediction.scores[neg]
    };
    Orientation { pos, neg, score }
}

/// The bias of the oriented score (the weight of the constant hypotheses; 0 in the paper's
/// form). With the hypotheses' training means it makes the [`baseline`], which the figure
/// and the live view state beside their legends.
pub fn bias(model: &ShapeletModel, o: &Orientation) -> f64 {
    let b = |c: usize| -> f64 {
        model
            .ensembles
            .iter()
            .find(|e| e.positive_class == c)
            .map_or(0.0, |e| e.bias)
    };
    match &model.head {
        Some(h) => h.bias[o.pos] - h.bias[o.neg],
        None if model.ensembles.len() == 1 => b(1),
        None => b(o.pos) - b(o.neg),
    }
}

/// A hypothesis's weight in the oriented score: with the pooled head the difference of its
/// weights in the two classes' scores (`flat`: its index in model order); else its own
/// ensemble's weight `w`, signed by that ensemble's class (None: neither class's).
pub fn weight_in_score(
    model: &ShapeletModel,
    o: &Orientation,
    class: &str,
    flat: usize,
    w: f64,
) -> Option<f64> {
    match &model.head {
        Some(h) => Some(h.weights[o.pos][flat] - h.weights[o.neg][flat]),
        None if *class == model.classes[o.pos] => Some(w),
        None if *class == model.classes[o.neg] => Some(-w),
        None => None,
    }
}

/// What a hypothesis's maximising subsequence covers on a series of `n` points (0: a bag,
/// whose instance it names). A level hypothesis speaks of its channel's values wherever
/// they lie (its best point is where one value happens to be nearest): the whole channel.
pub fn covers(c: &Contribution, n: usize) -> FindingKey {
    let drawn = drawn_channels(c.channel, c.block);
    if n == 0 {
        return (drawn.start, drawn.len(), c.offset, c.offset);
    }
    let e = extraction(c);
    if e.is_level() {
        return (drawn.start, drawn.len(), 0, n - 1);
    }
    let p = e.positions(c.offset, n);
    let last = *p.last().expect("a subsequence has a value");
    (drawn.start, drawn.len(), p[0], last)
}

/// The findings of an explanation of a series of `n` points (0: a bag), as its figure lists
/// them, without drawing it: the prediction rows' `findings` and `shown_share`.
pub fn explanation_findings(
    model: &ShapeletModel,
    e: &Explanation,
    n: usize,
    top: usize,
) -> (Vec<Finding>, Option<Other>, f64) {
    let o = orientation(model, &e.prediction);
    let parts = e
        .contributions
        .iter()
        .filter_map(|c| {
            let w = weight_in_score(model, &o, &c.class, c.hypothesis, c.weight)?;
            Some((covers(c, n), w * (c.similarity - c.baseline), c))
        })
        .collect();
    findings_of(parts, top, n)
}

/// The channels a segment is drawn on: its space's channel, or all of a dependent block.
pub fn drawn_channels(channel: usize, block: usize) -> std::ops::Range<usize> {
    if block == 0 {
        channel..channel + 1
    } else {
        0..block
    }
}
