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
    })
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
const LEGEND_COLUMN: i32 = 92;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<()> {
    register_font()?;
    root.fill(&WHITE).map_err(draw_error)?;
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
    let title = format!(
        "{}: predicted {}{truth}; {score} = {} (warm votes for {}, cool for {})",
        fig.id,
        fig.label,
        legend_text(fig.score),
        fig.positive,
        fig.negative
    );
    let body = root
        .titled(&title, ("sans-serif", 17).into_font())
        .map_err(draw_error)?;
    match &fig.input {
        Input::Series(series) => {
            let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
            series_panel(
                &top,
                series,
                &fig.maximizers,
                "(a) matched subsequences, w_j h_j(B)",
            )?;
            series_panel(
                &bottom,
                series,
                &fig.patterns,
                "(b) important patterns z at their best match, w_j alpha_j,z",
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
                series_panel(
                    &left,
                    &channels[c],
                    &on(&fig.maximizers),
                    &format!("{}: (a) matched subsequences, w_j h_j(B)", names[c]),
                )?;
                series_panel(
                    &right,
                    &channels[c],
                    &on(&fig.patterns),
                    &format!("{}: (b) important patterns z, w_j alpha_j,z", names[c]),
                )?;
            }
        }
        Input::Bag { instances } => bag_panel(&body, *instances, &fig.maximizers)?,
    }
    Ok(())
}

/// Splits off the legend column(s) for `n` entries on the right of `area`.
fn legend_split<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    n: usize,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>, usize) {
    let (w, h) = area.dim_in_pixel();
    let rows = ((h as i32 - 30) / LEGEND_ROW).max(1) as usize;
    let cols = n.div_ceil(rows).max(1);
    let legend_w = (cols as i32 * LEGEND_COLUMN + 10).min(w as i32 / 2);
    let (plot, legend) = area.split_horizontally(w as i32 - legend_w);
    (plot, legend, rows)
}

/// The legend: one swatch and value per segment, largest |value| first.
fn draw_legend<DB: DrawingBackend>(
    legend: &DrawingArea<DB, Shift>,
    segments: &[Segment],
    rows: usize,
    scale: f64,
) -> Result<()> {
    let font = ("sans-serif", 12).into_font();
    for (i, s) in segments.iter().enumerate() {
        let x = (i / rows) as i32 * LEGEND_COLUMN + 4;
        let y = (i % rows) as i32 * LEGEND_ROW + 24;
        let colour = diverging(s.value / scale);
        legend
            .draw(&Rectangle::new(
                [(x, y + 4), (x + 18, y + 8)],
                colour.filled(),
            ))
            .map_err(draw_error)?;
        legend
            .draw(&Text::new(legend_text(s.value), (x + 22, y), font.clone()))
            .map_err(draw_error)?;
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
    caption: &str,
) -> Result<()> {
    let (plot, legend, rows) = legend_split(area, segments.len());
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
    let scale = max_abs(segments);
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
    draw_legend(&legend, segments, rows, scale)
}

/// A bag: per instance, the contributions of the hypotheses it maximises, stacked (votes
/// for the positive class upwards, for the negative downwards).
fn bag_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    instances: usize,
    segments: &[Segment],
) -> Result<()> {
    let (plot, legend, rows) = legend_split(area, segments.len());
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
    let scale = max_abs(segments);
    chart
        .draw_series(bars.iter().map(|&(i, from, to, v)| {
            Rectangle::new(
                [(i as f64 - 0.35, from), (i as f64 + 0.35, to)],
                diverging(v / scale).filled(),
            )
        }))
        .map_err(draw_error)?;
    draw_legend(&legend, segments, rows, scale)
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
