//! Pictures of a prediction: the paper's Figure 1 (Suehiro et al., section 7.1).
//!
//! Two steps, testable apart: [`figure`] computes what to draw (plain data: the segments,
//! their offsets and signed values, the score they add up to), [`render_svg`] and
//! [`render_png`] draw it with plotters.
//!
//! - Figure 1(a): for each hypothesis j, the subsequence x* = argmax_x h_j that it matched,
//!   over the series at its offset, coloured by its contribution w_j h_j(B).
//! - Figure 1(b): every representative z with w_j alpha_{j,z} != 0 (the model's "important
//!   patterns"), drawn at its best-matching position on the series (Euclidean distance, as
//!   the paper does: the Gaussian kernel's feature space cannot be drawn), coloured by
//!   w_j alpha_{j,z}.
//! - A multichannel series: one row per channel, (a) and (b) side by side, each segment on
//!   the channel its space reads (a dependent space's block on every channel it spans).
//! - A bag (multiple-instance data) has no line to draw on: a bar chart of the
//!   contributions of its instances, one bar segment per hypothesis at its maximising
//!   instance.
//!
//! Values are signed towards the figure's *positive* class: warm colours vote for it, cool
//! ones for the *negative* class, as in the paper. With two classes these are the second
//! and the first class (the paper's y = +1 and -1); with more, the predicted class against
//! the runner-up. Either way the drawn contributions add up to the figure's score (g has no
//! bias term, eq. 2), whose sign is the decision.

use std::path::PathBuf;

use serde::Serialize;

mod render;

pub use render::{diverging, legend_text, render_png, render_svg, size, write};

use crate::mil::findings::{
    covers, drawn_channels, extraction, findings_of, orientation, weight_in_score, FindingKey,
    Orientation,
};
pub use crate::mil::findings::{explanation_findings, Finding, Other};

use crate::mil::error::MilError;
use crate::mil::prediction::Contribution;
use crate::mil::shapelet::ShapeletModel;
use crate::mil::space::{is_zero, Extraction, View};
use crate::mil::{Model, Sample};

/// Why a figure could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    #[error("{0}")]
    Model(#[from] MilError),
    #[error("figures are drawn for lpboost models, this one is {0}")]
    Kind(&'static str),
    #[error("drawing the figure: {0}")]
    Draw(String),
    #[error("writing {path}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

type Result<T> = std::result::Result<T, FigureError>;

/// One coloured thing on the figure: a matched subsequence (a), an important pattern (b),
/// or a bar segment (bags).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Highlight {
    /// The class of the hypothesis's ensemble (its positive class); with a pooled head, the
    /// predicted class, whose score every hypothesis adds to (as in `explain`).
    pub class: String,
    /// Index of the hypothesis within that ensemble (as in `explain` and prediction rows);
    /// with a pooled head, its index in model order (every ensemble's, one after another).
    pub hypothesis: usize,
    /// Figure 1(b): the representative's index within its space.
    pub representative: Option<u32>,
    /// Start of the subsequence on the series (for a bag: the instance index).
    pub offset: usize,
    /// The channel it is drawn on (0 for univariate series and bags).
    #[serde(skip_serializing_if = "is_zero")]
    pub channel: usize,
    pub length: usize,
    /// Series positions of the values drawn: offset, offset + d, ... for a dilation d
    /// (shifted by one for the difference view); empty for bags.
    pub positions: Vec<usize>,
    /// The values drawn: (a) the series' subsequence, (b) the representative z; empty
    /// for bags.
    pub values: Vec<f64>,
    /// Signed towards the figure's positive class: (a) +-w_j h_j(B), (b) +-w_j alpha_{j,z}.
    pub value: f64,
}

/// What the sample is, for drawing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    Series(Vec<f64>),
    /// A multichannel series: its channels and their names (from the training header, or
    /// `channel <c>`).
    Multi {
        channels: Vec<Vec<f64>>,
        names: Vec<String>,
    },
    Bag {
        instances: usize,
    },
}

/// Everything a figure shows, computed from the model and one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub id: String,
    pub truth: Option<String>,
    /// The predicted label.
    pub label: String,
    /// Warm colours vote for this class, cool ones for `negative`.
    pub positive: String,
    pub negative: String,
    /// g(positive) - g(negative) (a single binary ensemble: g itself); > 0 means
    /// `positive` wins.
    pub score: f64,
    /// The model is one binary ensemble (the paper's form): `score` is its g.
    pub single: bool,
    /// The model's class count: above two, `positive` is the predicted class and
    /// `negative` the runner-up.
    pub classes: usize,
    /// The baseline (`findings::baseline`): the ensembles' bias (the weight of the constant
    /// hypotheses; 0 in the paper's form, where g(B) = sum_j w_j h_j(B), eq. 2) plus each
    /// hypothesis's weight times its training-set mean output. The contributions, read
    /// against those means, plus the baseline make the score.
    pub bias: f64,
    pub input: Input,
    /// Figure 1(a) (or the bars of a bag): one per hypothesis, largest |value| first.
    pub maximizers: Vec<Highlight>,
    /// Figure 1(b): one per non-zero w_j alpha_{j,z}, largest |value| first; empty for bags.
    pub patterns: Vec<Highlight>,
    /// What is drawn and listed: the hypotheses grouped by the positions their maximising
    /// subsequence covers (one finding, their contributions summed), the `top` largest by
    /// |value|, largest first.
    pub findings: Vec<Finding>,
    /// The rest, as one legend entry, so the entries sum to the score less the baseline.
    pub other: Option<Other>,
    /// The share of the contributions' sum (the score less the baseline) that the findings
    /// shown carry: 1 when they are all of it.
    pub shown_share: f64,
}

/// The model behind a figure, or why there is none: the other kinds (MIORDM, the SVMs)
/// have no shapelets to draw, and get an error rather than a picture that means something
/// else (`explain` without --out prints their witness or reference-bag contributions).
pub fn shapelet_model(model: &Model) -> Result<&ShapeletModel> {
    if let Model::LpboostShapelet(m) = model {
        Ok(m)
    } else {
        Err(FigureError::Kind(model.kind_name()))
    }
}

/// Computes the figure of `sample` (named `id`, with its known label `truth`, if any).
pub fn figure(
    model: &ShapeletModel,
    sample: &Sample,
    id: &str,
    truth: Option<&str>,
    top: usize,
) -> Result<Figure> {
    let (prediction, contributions) = model.explain(sample)?;
    let classes = &model.classes;
    let single = model.ensembles.len() == 1;
    let o = orientation(model, &prediction);
    let (pos, neg, score) = (o.pos, o.neg, o.score);
    // The series' channels (one for a univariate series); none for a bag.
    let channels: Vec<&[f64]> = match sample {
        Sample::Series(v) => vec![v.as_slice()],
        Sample::Multi(c) => c.iter().map(Vec::as_slice).collect(),
        Sample::Bag(_) => Vec::new(),
    };
    let weight_in_score =
        |class: &str, flat: usize, w: f64| weight_in_score(model, &o, class, flat, w);
    let mut maximizers = Vec::new();
    // (what it covers, its value in the score, itself) per hypothesis of the score.
    let mut parts: Vec<(FindingKey, f64, &Contribution)> = Vec::new();
    for c in &contributions {
        // A head model's contribution names the hypothesis by its index in model order.
        let Some(w) = weight_in_score(&c.class, c.hypothesis, c.weight) else {
            continue;
        };
        let e = extraction(c);
        let segment = |channel: usize, positions: Vec<usize>, values: Vec<f64>| Highlight {
            class: c.class.clone(),
            hypothesis: c.hypothesis,
            representative: None,
            offset: c.offset,
            channel,
            length: c.length,
            positions,
            values,
            value: w * (c.similarity - c.baseline),
        };
        let n = channels.first().map_or(0, |v| v.len());
        parts.push((covers(c, n), w * (c.similarity - c.baseline), c));
        if channels.is_empty() {
            maximizers.push(segment(0, Vec::new(), Vec::new()));
            continue;
        }
        // A dependent space's instance spans every channel: its segment is drawn on each,
        // each copy carrying the whole contribution (sum over distinct hypotheses).
        for ch in drawn_channels(c.channel, c.block) {
            let v = channels[ch];
            let positions = e.positions(c.offset, v.len());
            let values = positions.iter().map(|&i| v[i]).collect();
            maximizers.push(segment(ch, positions, values));
        }
    }
    let mut patterns = patterns_of(model, &o, &channels);
    let (findings, other, shown_share) =
        findings_of(parts, top, channels.first().map_or(0, |v| v.len()));
    let shown: std::collections::HashSet<(&str, usize)> = findings
        .iter()
        .flat_map(|f| f.hypotheses.iter().map(|(c, h)| (c.as_str(), *h)))
        .collect();
    // Figure 1(b) draws the patterns of the findings shown, not every non-zero one.
    patterns.retain(|s| shown.contains(&(s.class.as_str(), s.hypothesis)));
    Ok(Figure {
        id: id.to_string(),
        truth: truth.map(str::to_string),
        label: prediction.label,
        positive: classes[pos].clone(),
        negative: classes[neg].clone(),
        score,
        single,
        classes: classes.len(),
        bias: crate::mil::findings::baseline(model, &o),
        input: input_of(model, sample),
        maximizers,
        patterns,
        findings,
        other,
        shown_share,
    })
}

/// Figure 1(b)'s patterns: every kept hypothesis's non-zero representatives, each drawn on
/// the series where it matches best, largest value in the score first (none for a bag).
fn patterns_of(model: &ShapeletModel, o: &Orientation, channels: &[&[f64]]) -> Vec<Highlight> {
    let mut patterns = Vec::new();
    if channels.is_empty() {
        return patterns;
    }
    let classes = &model.classes;
    let mut flat = 0;
    for e in &model.ensembles {
        let own = &classes[e.positive_class];
        // As in the maximizers: a head model's segments carry the predicted class.
        let class = if model.head.is_some() {
            &classes[o.pos]
        } else {
            own
        };
        for (j, h) in e.hypotheses.iter().enumerate() {
            flat += 1;
            let Some(w) = weight_in_score(model, o, own, flat - 1, h.weight) else {
                continue;
            };
            let space = &model.spaces[h.space];
            let ex = space.extraction();
            let dim = ex.dim();
            for &(z, a) in h.alpha.iter().filter(|(_, a)| *a != 0.0) {
                let rep = &space.representatives[z as usize * dim..(z as usize + 1) * dim];
                let drawn = if ex == Extraction::raw(space.length) {
                    let o = best_match(channels[0], rep);
                    (o, vec![(0, (o..o + space.length).collect(), rep.to_vec())])
                } else {
                    pattern_on_series(channels, &ex, rep)
                };
                let (offset, per_channel) = drawn;
                for (channel, positions, values) in per_channel {
                    patterns.push(Highlight {
                        class: class.clone(),
                        hypothesis: if model.head.is_some() { flat - 1 } else { j },
                        representative: Some(z),
                        offset,
                        channel,
                        length: space.length,
                        positions,
                        values,
                        value: w * a,
                    });
                }
            }
        }
    }
    patterns.sort_by(|a: &Highlight, b| b.value.abs().total_cmp(&a.value.abs()));
    patterns
}

/// The figure's input: the series (its channels, named) or the bag's size.
fn input_of(model: &ShapeletModel, sample: &Sample) -> Input {
    match sample {
        Sample::Series(v) => Input::Series(v.clone()),
        Sample::Bag(b) => Input::Bag { instances: b.len() },
        Sample::Multi(c) => Input::Multi {
            channels: c.clone(),
            names: (0..c.len())
                .map(|i| {
                    model
                        .channel_names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("channel {i}"))
                })
                .collect(),
        },
    }
}

/// A pattern drawn on one channel: (channel, series positions, values).
type OnChannel = (usize, Vec<usize>, Vec<f64>);

/// A representative of a space other than the paper's, drawn on the series: at the offset
/// whose instance (in the space's own reading, over all the channels it reads) is nearest
/// to it, mapped back to each channel's units: a z-normalised pattern takes that
/// subsequence's mean and deviation, a pattern of differences is summed up from the series
/// value where it starts. Returns the offset and (channel, positions, values) per channel.
fn pattern_on_series(channels: &[&[f64]], e: &Extraction, rep: &[f64]) -> (usize, Vec<OnChannel>) {
    let mut sub = vec![0.0; e.dim()];
    let mut best = (f64::INFINITY, 0);
    for o in 0..e.count(channels[0].len(), 1) {
        e.extract_channels(channels, o, &mut sub);
        let d: f64 = sub.iter().zip(rep).map(|(a, b)| (a - b) * (a - b)).sum();
        if d < best.0 {
            best = (d, o);
        }
    }
    let o = best.1;
    let one = Extraction {
        channel: 0,
        block: 0,
        ..*e
    };
    let raw = Extraction {
        znorm: false,
        view: if one.view == View::Centred {
            View::Raw
        } else {
            one.view
        },
        ..one
    };
    let mut sub = vec![0.0; e.length];
    let drawn = drawn_channels(e.channel, e.block)
        .zip(rep.chunks_exact(e.length))
        .map(|(c, rep)| {
            let series = channels[c];
            raw.extract(series, o, &mut sub);
            let mut values: Vec<f64> = if e.znorm {
                let n = sub.len() as f64;
                let mean = sub.iter().sum::<f64>() / n;
                let std = (sub.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
                rep.iter().map(|r| r * std + mean).collect()
            } else if e.view == View::Centred {
                // Drawn at the level of the subsequence it matches.
                let mean = sub.iter().sum::<f64>() / sub.len() as f64;
                rep.iter().map(|r| r + mean).collect()
            } else {
                rep.to_vec()
            };
            if matches!(e.view, View::Diff | View::Lag) {
                // Each difference drawn where it leads: the series value it starts from
                // plus it.
                let last = series.len() - 1;
                for (i, v) in values.iter_mut().enumerate() {
                    *v += series[(o + i * e.dilation).min(last)];
                }
            }
            (c, one.positions(o, series.len()), values)
        })
        .collect();
    (o, drawn)
}

/// The start of the subsequence of `series` nearest to `z` (squared Euclidean distance;
/// the first on ties). `series` is at least as long as `z` (checked by `explain`).
fn best_match(series: &[f64], z: &[f64]) -> usize {
    let mut best = (f64::INFINITY, 0);
    for (o, w) in series.windows(z.len()).enumerate() {
        let d: f64 = w.iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum();
        if d < best.0 {
            best = (d, o);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::style::RGBColor;

    #[test]
    fn diverging_is_warm_for_positive_and_cool_for_negative() {
        let RGBColor(r, _, b) = diverging(1.0);
        assert!(r > 150 && b < 80, "deep red at +1");
        let RGBColor(r, _, b) = diverging(-1.0);
        assert!(b > r, "purple at -1");
        let RGBColor(r, g, b) = diverging(0.2);
        assert!(
            r > 200 && g > 150 && b < 120,
            "yellow-orange near 0+: {r} {g} {b}"
        );
        assert_eq!(diverging(f64::NAN), diverging(0.0));
        assert_eq!(diverging(7.0), diverging(1.0));
    }

    #[test]
    fn best_match_finds_the_nearest_subsequence() {
        let s = [0.0, 1.0, 5.0, 6.0, 0.0];
        assert_eq!(best_match(&s, &[5.0, 6.0]), 2);
        assert_eq!(best_match(&s, &[0.0, 1.0]), 0);
        assert_eq!(best_match(&s, &[6.1, 0.2]), 3);
    }
}
