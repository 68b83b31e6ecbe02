//! Drawing a [`Figure`] with plotters: SVG or PNG, the title, panels (a) and (b) (or a
//! bag's bars) and their legends, one entry per finding.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use super::{Figure, FigureError, Input, Result, Segment};

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
