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

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use serde::Serialize;

use crate::mil::error::MilError;
use crate::mil::prediction::{Asserts, Contribution};
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
pub struct Segment {
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
    /// The ensembles' bias (the weight of the constant hypotheses; 0 in the paper's form,
    /// where g(B) = sum_j w_j h_j(B), eq. 2): the contributions plus the bias make the score.
    pub bias: f64,
    pub input: Input,
    /// Figure 1(a) (or the bars of a bag): one per hypothesis, largest |value| first.
    pub maximizers: Vec<Segment>,
    /// Figure 1(b): one per non-zero w_j alpha_{j,z}, largest |value| first; empty for bags.
    pub patterns: Vec<Segment>,
    /// What is drawn and listed: the hypotheses grouped by the positions their maximising
    /// subsequence covers (one finding, their contributions summed), the `top` largest by
    /// |value|, largest first.
    pub findings: Vec<Finding>,
    /// The rest, as one legend entry, so the entries sum to the score less the bias.
    pub other: Option<Other>,
    /// The share of the contributions' sum (the score less the bias) that the findings shown
    /// carry: 1 when they are all of it.
    pub shown_share: f64,
}

/// Hypotheses whose maximising subsequences cover the same positions: one thing the figure
/// says about the sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What it asserts, in words, as the legend and `explain --out` print it.
    pub text: String,
    /// The summed contribution, signed towards the positive class.
    pub value: f64,
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
    // Orientation: which class is warm, which cool, and the score that decides between them.
    let single = model.ensembles.len() == 1;
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
    let score = if single {
        // A single ensemble reports (-g, g); g is the decision value.
        prediction.scores[1]
    } else {
        prediction.scores[pos] - prediction.scores[neg]
    };
    let sign = |class: &str| -> Option<f64> {
        if *class == classes[pos] {
            Some(1.0)
        } else if *class == classes[neg] {
            Some(-1.0)
        } else {
            None
        }
    };
    // The series' channels (one for a univariate series); none for a bag.
    let channels: Vec<&[f64]> = match sample {
        Sample::Series(v) => vec![v.as_slice()],
        Sample::Multi(c) => c.iter().map(Vec::as_slice).collect(),
        Sample::Bag(_) => Vec::new(),
    };
    // A hypothesis's weight in `score`: with the pooled head the difference of its weights
    // in the two classes' scores (`flat`: its index in model order); else its own
    // ensemble's weight, signed by that ensemble's class (None: neither class's).
    let weight_in_score = |class: &str, flat: usize, w: f64| -> Option<f64> {
        match &model.head {
            Some(h) => Some(h.weights[pos][flat] - h.weights[neg][flat]),
            None => sign(class).map(|s| s * w),
        }
    };
    let mut maximizers = Vec::new();
    // (key, value, class, hypothesis, asserts text, space) per hypothesis of the score.
    let mut parts: Vec<(FindingKey, f64, &Contribution, String)> = Vec::new();
    for c in &contributions {
        // A head model's contribution names the hypothesis by its index in model order.
        let Some(w) = weight_in_score(&c.class, c.hypothesis, c.weight) else {
            continue;
        };
        let e = Extraction {
            view: c.view,
            length: c.length,
            dilation: c.dilation,
            znorm: c.znorm,
            channel: 0,
            block: 0,
        };
        let segment = |channel: usize, positions: Vec<usize>, values: Vec<f64>| Segment {
            class: c.class.clone(),
            hypothesis: c.hypothesis,
            representative: None,
            offset: c.offset,
            channel,
            length: c.length,
            positions,
            values,
            value: w * c.similarity,
        };
        let n = channels.first().map_or(0, |v| v.len());
        let covered = if channels.is_empty() {
            (c.offset, c.offset)
        } else {
            let p = e.positions(c.offset, n);
            (p[0], *p.last().expect("a subsequence has a value"))
        };
        let drawn = drawn_channels(c.channel, c.block);
        parts.push((
            (drawn.start, drawn.len(), covered.0, covered.1),
            w * c.similarity,
            c,
            space_name(c),
        ));
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
    let mut patterns = Vec::new();
    if !channels.is_empty() {
        let mut flat = 0;
        for e in &model.ensembles {
            let own = &classes[e.positive_class];
            // As in the maximizers: a head model's segments carry the predicted class.
            let class = if model.head.is_some() {
                &classes[pos]
            } else {
                own
            };
            for (j, h) in e.hypotheses.iter().enumerate() {
                flat += 1;
                let Some(w) = weight_in_score(own, flat - 1, h.weight) else {
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
                        pattern_on_series(&channels, &ex, rep)
                    };
                    let (offset, per_channel) = drawn;
                    for (channel, positions, values) in per_channel {
                        patterns.push(Segment {
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
        patterns.sort_by(|a: &Segment, b| b.value.abs().total_cmp(&a.value.abs()));
    }
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
        bias: {
            let b = |c: usize| -> f64 {
                model
                    .ensembles
                    .iter()
                    .find(|e| e.positive_class == c)
                    .map_or(0.0, |e| e.bias)
            };
            match &model.head {
                Some(h) => h.bias[pos] - h.bias[neg],
                None if single => b(1),
                None => b(pos) - b(neg),
            }
        },
        input: match sample {
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
        },
        maximizers,
        patterns,
        findings,
        other,
        shown_share,
    })
}

/// (first channel, channels, first position, last position): what a finding covers.
type FindingKey = (usize, usize, usize, usize);

/// `raw d1 z`: a space's view, dilation and normalisation, as findings name them.
fn space_name(c: &Contribution) -> String {
    let view = match c.view {
        View::Raw => "raw",
        View::Diff => "diff",
    };
    format!("{view} d{}{}", c.dilation, if c.znorm { " z" } else { "" })
}

/// Which third of a series a relative position lies in.
fn third(at: f64) -> &'static str {
    if at < 1.0 / 3.0 {
        "first"
    } else if at < 2.0 / 3.0 {
        "middle"
    } else {
        "last"
    }
}

/// What one hypothesis asserts about the sample, in words: `match` and `mean` name the
/// positions and the space, thresholds and positions their verdict.
fn asserts_text(c: &Contribution, key: &FindingKey, n: usize) -> String {
    let (ch, chs, start, end) = *key;
    let on = match (n, chs) {
        (0, _) => format!("instance {start}"),
        (_, 1) if ch > 0 => format!("{start}-{end} on channel {ch}"),
        (_, 1) => format!("{start}-{end}"),
        _ => format!("{start}-{end} on {chs} channels"),
    };
    let space = space_name(c);
    let verdict = |yes: bool| if yes { "yes" } else { "no" };
    match c.asserts {
        Asserts::Match if n == 0 => format!("instance {start} matches"),
        Asserts::Match => format!("matches a pattern at {on} ({space})"),
        Asserts::Mean => format!("a pattern occurs often, best at {on} ({space})"),
        Asserts::Threshold { above, mean, .. } => format!(
            "{} within reach of a pattern ({space}): {}",
            if mean {
                "subsequences on average"
            } else {
                "a subsequence"
            },
            // The output is 1 when the assertion in its `above` form holds.
            verdict((c.similarity > 0.5) == above)
        ),
        Asserts::Position { at, above } => format!(
            "best match of a pattern {} the {} third ({space}): {}, at {start}",
            if above { "from" } else { "before" },
            third(at),
            verdict(c.similarity > 0.5)
        ),
    }
}

/// Groups the hypotheses by what their maximising subsequence covers, orders the groups by
/// |summed value| and keeps the `top` largest; the rest become one `Other`. Also the share
/// of the contributions' sum the kept ones carry.
fn findings_of(
    parts: Vec<(FindingKey, f64, &Contribution, String)>,
    top: usize,
    n: usize,
) -> (Vec<Finding>, Option<Other>, f64) {
    let total: f64 = parts.iter().map(|p| p.1).sum();
    let mut groups: Vec<(FindingKey, Vec<(f64, &Contribution, String)>)> = Vec::new();
    for (key, value, c, space) in parts {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push((value, c, space)),
            None => groups.push((key, vec![(value, c, space)])),
        }
    }
    let mut findings: Vec<Finding> = groups
        .into_iter()
        .map(|(key, mut g)| {
            g.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
            let value: f64 = g.iter().map(|p| p.0).sum();
            let mut spaces: Vec<String> = Vec::new();
            for (_, _, s) in &g {
                if !spaces.contains(s) {
                    spaces.push(s.clone());
                }
            }
            let mut text = asserts_text(g[0].1, &key, n);
            if g.len() > 1 {
                text.push_str(&format!(" +{} more", g.len() - 1));
            }
            Finding {
                text,
                value,
                channel: key.0,
                channels: key.1,
                start: key.2,
                end: key.3,
                hypotheses: g
                    .iter()
                    .map(|(_, c, _)| (c.class.clone(), c.hypothesis))
                    .collect(),
                spaces,
            }
        })
        .collect();
    findings.sort_by(|a, b| b.value.abs().total_cmp(&a.value.abs()));
    // A finding a thousand times smaller than the largest says nothing a reader can see
    // (its entry would print as zero): it joins the rest.
    let largest = findings.first().map_or(0.0, |f| f.value.abs());
    let shown = findings
        .iter()
        .take(top)
        .take_while(|f| f.value != 0.0 && f.value.abs() >= 1e-3 * largest)
        .count();
    let rest = findings.split_off(shown);
    let other = (!rest.is_empty()).then(|| Other {
        hypotheses: rest.iter().map(|f| f.hypotheses.len()).sum(),
        value: rest.iter().map(|f| f.value).sum(),
    });
    let kept: f64 = findings.iter().map(|f| f.value).sum();
    let share = if total != 0.0 { kept / total } else { 1.0 };
    (findings, other, share)
}

/// The channels a segment is drawn on: its space's channel, or all of a dependent block.
fn drawn_channels(channel: usize, block: usize) -> std::ops::Range<usize> {
    if block == 0 {
        channel..channel + 1
    } else {
        0..block
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
            } else {
                rep.to_vec()
            };
            if e.view == View::Diff {
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

/// The diverging colour scale: t in [-1, 1]; 0 is pale, +1 deep red through orange and
/// yellow (votes for the positive class), -1 purple through light blue (negative), as in
/// the paper's Figure 1.
pub fn diverging(t: f64) -> RGBColor {
    const WARM: [(f64, [f64; 3]); 3] = [
        (0.0, [255.0, 221.0, 87.0]),
        (0.5, [245.0, 130.0, 32.0]),
        (1.0, [178.0, 24.0, 43.0]),
    ];
    const COOL: [(f64, [f64; 3]); 3] = [
        (0.0, [120.0, 200.0, 235.0]),
        (0.5, [33.0, 102.0, 172.0]),
        (1.0, [84.0, 39.0, 143.0]),
    ];
    let t = if t.is_finite() {
        t.clamp(-1.0, 1.0)
    } else {
        0.0
    };
    let stops = if t >= 0.0 { &WARM } else { &COOL };
    let a = t.abs();
    let (lo, hi) = if a <= 0.5 {
        (stops[0], stops[1])
    } else {
        (stops[1], stops[2])
    };
    let f = (a - lo.0) / (hi.0 - lo.0);
    let mix = |i: usize| (lo.1[i] + f * (hi.1[i] - lo.1[i])).round() as u8;
    RGBColor(mix(0), mix(1), mix(2))
}

/// A legend value as printed on the figure: four decimals, or three significant digits
/// in scientific notation when that would show only zeros.
pub fn legend_text(value: f64) -> String {
    if value == 0.0 || value.abs() >= 1e-3 {
        format!("{value:+.4}")
    } else {
        format!("{value:+.2e}")
    }
}

/// Figure width and height in pixels.
pub fn size(fig: &Figure) -> (u32, u32) {
    match fig.input {
        Input::Series(_) => (1100, 760),
        Input::Multi { ref channels, .. } => (1600, 60 + 320 * channels.len() as u32),
        Input::Bag { .. } => (1100, 440),
    }
}

/// The figure as an SVG document. Text is left to the viewer's sans-serif font.
pub fn render_svg(fig: &Figure) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size(fig)).into_drawing_area();
        draw(&root, fig)?;
        root.present().map_err(draw_error)?;
    }
    Ok(out)
}

/// The figure as a PNG file's bytes, text set in the bundled Hack font (no system font).
pub fn render_png(fig: &Figure) -> Result<Vec<u8>> {
    let (w, h) = size(fig);
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(&root, fig)?;
        root.present().map_err(draw_error)?;
    }
    let mut png_bytes = Vec::new();
    let mut enc = png::Encoder::new(&mut png_bytes, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::High);
    enc.write_header()
        .and_then(|mut wr| wr.write_image_data(&rgb))
        .map_err(|e| FigureError::Draw(format!("PNG encoding: {e}")))?;
    Ok(png_bytes)
}

/// Writes the figure to `path`: PNG when the name ends in `.png`, SVG otherwise.
pub fn write(fig: &Figure, path: &Path) -> Result<()> {
    let is_png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if is_png {
        render_png(fig)?
    } else {
        render_svg(fig)?.into_bytes()
    };
    std::fs::write(path, bytes).map_err(|source| FigureError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn draw_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> FigureError {
    FigureError::Draw(e.to_string())
}

/// plotters measures every text with a registered font, for SVG too (to lay out axis
/// labels); registering the compiled-in bytes means no system font is ever looked up.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            epaint_default_fonts::HACK_REGULAR,
        )
        .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(FigureError::Draw(
            "the bundled Hack font did not parse".into(),
        ))
    }
}

const LEGEND_ROW: i32 = 15;
const LEGEND_WIDTH: i32 = 360;

/// One legend line: its text and the value its colour shows.
type Entry = (String, f64);

/// The legend of panel (a): one entry per finding shown, then the rest.
fn finding_entries(fig: &Figure) -> Vec<Entry> {
    let mut out: Vec<Entry> = fig
        .findings
        .iter()
        .map(|f| (format!("{}: {}", f.text, legend_text(f.value)), f.value))
        .collect();
    if let Some(o) = &fig.other {
        out.push((
            format!(
                "other ({} hypotheses): {}",
                o.hypotheses,
                legend_text(o.value)
            ),
            o.value,
        ));
    }
    out
}

/// Panel (a)'s lines: each finding's first hypothesis's segments (all of them cover the
/// finding's positions), coloured by the finding's summed value.
fn finding_segments(fig: &Figure) -> Vec<Segment> {
    let mut out = Vec::new();
    for f in &fig.findings {
        let (class, h) = &f.hypotheses[0];
        for s in fig
            .maximizers
            .iter()
            .filter(|s| s.class == *class && s.hypothesis == *h)
        {
            out.push(Segment {
                value: f.value,
                ..s.clone()
            });
        }
    }
    out
}

/// Panel (b)'s lines and legend: the patterns of the findings shown, one entry per finding
/// (its patterns' summed w_j alpha_j,z), each line coloured by its finding's entry.
/// Entry k belongs to finding k (None: it has no pattern to draw).
fn pattern_view(fig: &Figure) -> (Vec<Segment>, Vec<Option<Entry>>) {
    let mut segments = Vec::new();
    let mut entries = Vec::new();
    for (k, f) in fig.findings.iter().enumerate() {
        let mine: Vec<&Segment> = fig
            .patterns
            .iter()
            .filter(|s| f.hypotheses.contains(&(s.class.clone(), s.hypothesis)))
            .collect();
        if mine.is_empty() {
            entries.push(None);
            continue;
        }
        let mut reps: Vec<(usize, Option<u32>)> = mine
            .iter()
            .map(|s| (s.hypothesis, s.representative))
            .collect();
        reps.dedup();
        let value: f64 = mine
            .iter()
            .filter(|s| s.channel == mine[0].channel)
            .map(|s| s.value)
            .sum();
        entries.push(Some((
            format!(
                "patterns of finding {} ({} z): {}",
                k + 1,
                reps.len(),
                legend_text(value)
            ),
            value,
        )));
        segments.extend(mine.into_iter().map(|s| Segment { value, ..s.clone() }));
    }
    (segments, entries)
}

/// The title's two lines: which case, the decision and truth; the score and its colours.
fn title_lines(fig: &Figure) -> (String, String) {
    let truth = fig
        .truth
        .as_ref()
        .map(|t| format!(" (truth {t})"))
        .unwrap_or_default();
    let score = if fig.single {
        "g".to_string()
    } else {
        format!("g({}) - g({})", fig.positive, fig.negative)
    };
    (
        format!("{}: predicted {}{truth}", fig.id, fig.label),
        format!(
            "{score} = {}; warm votes for {}, cool for {}; findings shown carry {:.0} % of it",
            legend_text(fig.score),
            fig.positive,
            fig.negative,
            fig.shown_share * 100.0
        ),
    )
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<()> {
    register_font()?;
    root.fill(&WHITE).map_err(draw_error)?;
    let (first, second) = title_lines(fig);
    let (head, body) = root.split_vertically(48);
    head.draw(&Text::new(first, (10, 6), ("sans-serif", 17).into_font()))
        .map_err(draw_error)?;
    head.draw(&Text::new(second, (10, 27), ("sans-serif", 14).into_font()))
        .map_err(draw_error)?;
    let drawn = finding_segments(fig);
    let entries = finding_entries(fig);
    let (patterns, pattern_entries) = pattern_view(fig);
    match &fig.input {
        Input::Series(series) => {
            let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
            series_panel(
                &top,
                series,
                &drawn,
                &entries,
                "(a) findings: matched subsequences, w_j h_j(B) summed",
            )?;
            series_panel(
                &bottom,
                series,
                &patterns,
                &pattern_entries
                    .iter()
                    .flatten()
                    .cloned()
                    .collect::<Vec<_>>(),
                "(b) their patterns z at their best match, w_j alpha_j,z",
            )?;
        }
        Input::Multi { channels, names } => {
            let rows = body.split_evenly((channels.len(), 1));
            for (c, row) in rows.iter().enumerate() {
                let (left, right) = row.split_horizontally(row.dim_in_pixel().0 / 2);
                let on = |segments: &[Segment]| -> Vec<Segment> {
                    segments
                        .iter()
                        .filter(|s| s.channel == c)
                        .cloned()
                        .collect()
                };
                // Each channel's legend lists the findings drawn on it (entry k is finding
                // k; the rest, drawn nowhere, is listed in the title's share).
                let here = |segments: &[Segment], entries: &[Option<Entry>]| -> Vec<Entry> {
                    entries
                        .iter()
                        .zip(&fig.findings)
                        .filter(|(_, f)| {
                            segments
                                .iter()
                                .any(|s| f.hypotheses.contains(&(s.class.clone(), s.hypothesis)))
                        })
                        .filter_map(|(e, _)| e.clone())
                        .collect()
                };
                let entries: Vec<Option<Entry>> = entries.iter().cloned().map(Some).collect();
                let a = on(&drawn);
                let b = on(&patterns);
                series_panel(
                    &left,
                    &channels[c],
                    &a,
                    &here(&a, &entries),
                    &format!("{}: (a) findings, w_j h_j(B) summed", names[c]),
                )?;
                series_panel(
                    &right,
                    &channels[c],
                    &b,
                    &here(&b, &pattern_entries),
                    &format!("{}: (b) their patterns z, w_j alpha_j,z", names[c]),
                )?;
            }
        }
        Input::Bag { instances } => bag_panel(&body, *instances, &drawn, &entries)?,
    }
    Ok(())
}

/// Splits off the legend column on the right of `area`: a third of it, wrapped text.
fn legend_split<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (w, _) = area.dim_in_pixel();
    let legend_w = (w as i32 / 3).clamp(180, LEGEND_WIDTH);
    area.split_horizontally(w as i32 - legend_w)
}

/// Splits `text` into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The legend: one swatch and wrapped text per entry, in order.
fn draw_legend<DB: DrawingBackend>(
    legend: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    scale: f64,
) -> Result<()> {
    let font = ("sans-serif", 12).into_font();
    // The bundled Hack is monospaced, about 7.3 px a character at 12 px.
    let chars = ((legend.dim_in_pixel().0 as i32 - 34) * 10 / 76).max(12) as usize;
    let mut y = 24;
    for (text, value) in entries {
        let x = 4;
        let colour = diverging(value / scale);
        legend
            .draw(&Rectangle::new(
                [(x, y + 4), (x + 18, y + 8)],
                colour.filled(),
            ))
            .map_err(draw_error)?;
        for line in wrap(text, chars) {
            legend
                .draw(&Text::new(line, (x + 22, y), font.clone()))
                .map_err(draw_error)?;
            y += LEGEND_ROW;
        }
        y += 4;
    }
    Ok(())
}

fn max_abs(segments: &[Segment]) -> f64 {
    let m = segments.iter().map(|s| s.value.abs()).fold(0.0, f64::max);
    if m > 0.0 {
        m
    } else {
        1.0
    }
}

/// The series in black with `segments` drawn over it, each as one line of its values
/// starting at its offset. Drawn smallest |value| first so the strongest lie on top.
fn series_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[f64],
    segments: &[Segment],
    entries: &[Entry],
    caption: &str,
) -> Result<()> {
    let (plot, legend) = legend_split(area);
    let values = series
        .iter()
        .chain(segments.iter().flat_map(|s| &s.values))
        .copied();
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let pad = ((hi - lo) * 0.05).max(1e-9);
    let mut chart = ChartBuilder::on(&plot)
        .caption(caption, ("sans-serif", 14).into_font())
        .margin(8)
        .x_label_area_size(24)
        .y_label_area_size(44)
        .build_cartesian_2d(
            0f64..(series.len() - 1).max(1) as f64,
            (lo - pad)..(hi + pad),
        )
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 11).into_font())
        .draw()
        .map_err(draw_error)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            series
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64, v))
                .collect::<Vec<_>>(),
            BLACK.stroke_width(1),
        )))
        .map_err(draw_error)?;
    // One scale for the lines and the swatches, so a line's colour is its entry's.
    let scale = max_abs(segments).max(max_entry(entries));
    chart
        .draw_series(segments.iter().rev().map(|s| {
            PathElement::new(
                s.values
                    .iter()
                    .zip(&s.positions)
                    .map(|(&v, &x)| (x as f64, v))
                    .collect::<Vec<_>>(),
                diverging(s.value / scale).stroke_width(3),
            )
        }))
        .map_err(draw_error)?;
    draw_legend(&legend, entries, scale)
}

fn max_entry(entries: &[Entry]) -> f64 {
    entries.iter().map(|e| e.1.abs()).fold(0.0, f64::max)
}

/// A bag: per instance, the contributions of the hypotheses it maximises, stacked (votes
/// for the positive class upwards, for the negative downwards).
fn bag_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    instances: usize,
    segments: &[Segment],
    entries: &[Entry],
) -> Result<()> {
    let (plot, legend) = legend_split(area);
    let (mut up, mut down) = (vec![0.0; instances], vec![0.0; instances]);
    // (instance, from, to, value) per bar segment.
    let mut bars = Vec::with_capacity(segments.len());
    for s in segments {
        let acc = if s.value >= 0.0 {
            &mut up[s.offset]
        } else {
            &mut down[s.offset]
        };
        bars.push((s.offset, *acc, *acc + s.value, s.value));
        *acc += s.value;
    }
    let hi = up.iter().copied().fold(0.0, f64::max);
    let lo = down.iter().copied().fold(0.0, f64::min);
    let pad = ((hi - lo) * 0.05).max(1e-9);
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            "contributions w_j h_j(B) by maximising instance",
            ("sans-serif", 14).into_font(),
        )
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5f64..(instances as f64 - 0.5), (lo - pad)..(hi + pad))
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("instance")
        .x_labels(instances.min(30) + 1)
        .x_label_formatter(&|x| {
            // Instances are whole numbers: no label between two bars.
            if (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", 11).into_font())
        .draw()
        .map_err(draw_error)?;
    // One scale for the lines and the swatches, so a line's colour is its entry's.
    let scale = max_abs(segments).max(max_entry(entries));
    chart
        .draw_series(bars.iter().map(|&(i, from, to, v)| {
            Rectangle::new(
                [(i as f64 - 0.35, from), (i as f64 + 0.35, to)],
                diverging(v / scale).filled(),
            )
        }))
        .map_err(draw_error)?;
    draw_legend(&legend, entries, scale)
}

#[cfg(test)]
mod tests {
    use super::*;

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
