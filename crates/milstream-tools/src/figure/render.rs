//! Drawing a [`Figure`] with plotters: SVG or PNG, the title, panels (a) and (b) (or a
//! bag's bars) and their legends, one entry per finding.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use super::{Figure, FigureError, Highlight, Input, Result};
use crate::mil::prediction::Asserts;

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
        draw(&root, fig, false)?;
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
        draw(&root, fig, true)?;
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
        .enumerate()
        .map(|(k, f)| {
            (
                format!("({}) {}: {}", k + 1, f.text, legend_text(f.value)),
                f.value,
            )
        })
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
fn finding_segments(fig: &Figure) -> Vec<Highlight> {
    let mut out = Vec::new();
    for f in &fig.findings {
        let (class, h) = &f.hypotheses[0];
        for s in fig
            .maximizers
            .iter()
            .filter(|s| s.class == *class && s.hypothesis == *h)
        {
            out.push(Highlight {
                value: f.value,
                ..s.clone()
            });
        }
    }
    out
}

/// A finding's mark on panel (a): its number over the positions it covers; a threshold's
/// verdict beside a dot on its matched region; a position's band over the positions it
/// asserts the best match lies in.
struct Mark {
    channel: usize,
    start: usize,
    end: usize,
    label: String,
    value: f64,
    dot: bool,
    band: Option<(usize, usize)>,
}

fn marks(fig: &Figure) -> Vec<Mark> {
    let mut out = Vec::new();
    for (k, f) in fig.findings.iter().enumerate() {
        let label = match f.verdict {
            Some(v) => format!("({}) {}", k + 1, if v { "yes" } else { "no" }),
            None => format!("({})", k + 1),
        };
        for channel in f.channel..f.channel + f.channels {
            out.push(Mark {
                channel,
                start: f.start,
                end: f.end,
                label: label.clone(),
                value: f.value,
                dot: matches!(f.asserts, Asserts::Threshold { .. }),
                band: f.band,
            });
        }
    }
    out
}

/// Panel (b)'s lines and legend: the patterns of the findings shown, one entry per finding
/// (its patterns' summed w_j alpha_j,z), each line coloured by its finding's entry.
/// Entry k belongs to finding k (None: it has no pattern to draw, or their weights cancel:
/// a pooled head weighs a pattern alike in two classes, and a sum a thousand times smaller
/// than the largest would print as zero).
fn pattern_view(fig: &Figure) -> (Vec<Highlight>, Vec<Option<Entry>>) {
    let per_finding: Vec<(Vec<&Highlight>, f64)> = fig
        .findings
        .iter()
        .map(|f| {
            let mine: Vec<&Highlight> = fig
                .patterns
                .iter()
                .filter(|s| f.hypotheses.contains(&(s.class.clone(), s.hypothesis)))
                .collect();
            let first = mine.first().map_or(0, |s| s.channel);
            let value = mine
                .iter()
                .filter(|s| s.channel == first)
                .map(|s| s.value)
                .sum();
            (mine, value)
        })
        .collect();
    let largest = per_finding.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
    let mut segments = Vec::new();
    let mut entries = Vec::new();
    for (k, (mine, value)) in per_finding.into_iter().enumerate() {
        if mine.is_empty() || value.abs() < 1e-3 * largest || value == 0.0 {
            entries.push(None);
            continue;
        }
        let mut reps: Vec<(usize, Option<u32>)> = mine
            .iter()
            .map(|s| (s.hypothesis, s.representative))
            .collect();
        reps.dedup();
        entries.push(Some((
            format!(
                "patterns of ({}): {} z, {}",
                k + 1,
                reps.len(),
                legend_text(value)
            ),
            value,
        )));
        segments.extend(mine.into_iter().map(|s| Highlight { value, ..s.clone() }));
    }
    (segments, entries)
}

/// The title's lines: which case, the decision and truth; then the score that decides
/// between the two classes drawn (with more classes: the predicted one and the runner-up),
/// its bias and colours, wrapped to `chars` characters.
fn title_lines(fig: &Figure, chars: usize) -> Vec<String> {
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
    let versus = if fig.classes > 2 {
        format!(
            ", the margin of {} over the runner-up {}",
            fig.positive, fig.negative
        )
    } else {
        String::new()
    };
    // A baseline that prints as zero is rounding (the master LP's constant hypotheses).
    let bias = if fig.bias.abs() >= 5e-5 {
        format!(" (baseline {})", legend_text(fig.bias))
    } else {
        String::new()
    };
    let second = format!(
        "{score} = {}{bias}{versus}; warm votes for {}, cool for {}; the findings shown carry {}",
        legend_text(fig.score),
        fig.positive,
        fig.negative,
        share_text(fig.shown_share)
    );
    let mut lines = vec![format!("{}: predicted {}{truth}", fig.id, fig.label)];
    lines.extend(wrap(&second, chars));
    lines
}

/// The findings' share of the score less the baseline, and why when it is not between 0
/// and 100 %: the rest pulls the other way (above), or outweighs them (below zero).
pub fn share_text(share: f64) -> String {
    let pct = share * 100.0;
    if share > 1.0 + 5e-3 {
        format!(
            "{pct:.0} % of its distance from the baseline (the rest pulls {:.0} % the other way)",
            pct - 100.0
        )
    } else if share < -5e-3 {
        format!("{pct:.0} % of its distance from the baseline (the rest outweighs them)")
    } else {
        format!("{pct:.0} % of its distance from the baseline")
    }
}

/// `bitmap`: drawn by plotters' own rasteriser, whose joins of thick lines spike at sharp
/// turns (a dense series zig-zags): its lines are drawn as separate two-point pieces.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
    bitmap: bool,
) -> Result<()> {
    register_font()?;
    root.fill(&WHITE).map_err(draw_error)?;
    // The bundled Hack is monospaced, about 8.5 px a character at 14 px.
    let chars = ((root.dim_in_pixel().0 as i32 - 20) * 10 / 85).max(40) as usize;
    let title = title_lines(fig, chars);
    let (head, body) = root.split_vertically(31 + 17 * (title.len() as i32 - 1));
    for (i, line) in title.into_iter().enumerate() {
        let (y, size) = if i == 0 {
            (6, 17)
        } else {
            (10 + 17 * i as i32, 14)
        };
        head.draw(&Text::new(line, (10, y), ("sans-serif", size).into_font()))
            .map_err(draw_error)?;
    }
    let drawn = finding_segments(fig);
    let entries = finding_entries(fig);
    let (patterns, pattern_entries) = pattern_view(fig);
    let marks = marks(fig);
    // One scale for the lines, marks and swatches, so a line's colour is its entry's.
    let pattern_list: Vec<Entry> = pattern_entries.iter().flatten().cloned().collect();
    let style = Style {
        bitmap,
        scale: max_abs(&drawn).max(max_entry(&entries)),
    };
    let style_b = Style {
        bitmap,
        scale: max_abs(&patterns).max(max_entry(&pattern_list)),
    };
    match &fig.input {
        Input::Series(series) => {
            let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
            series_panel(
                &top,
                series,
                (&drawn, &marks.iter().collect::<Vec<_>>()),
                &entries,
                "(a) findings: matched subsequences, w_j h_j(B) summed",
                style,
            )?;
            series_panel(
                &bottom,
                series,
                (&patterns, &[]),
                &pattern_list,
                "(b) their patterns z at their best match, w_j alpha_j,z",
                style_b,
            )?;
        }
        Input::Multi { channels, names } => {
            let rows = body.split_evenly((channels.len(), 1));
            for (c, row) in rows.iter().enumerate() {
                let (left, right) = row.split_horizontally(row.dim_in_pixel().0 / 2);
                let on = |segments: &[Highlight]| -> Vec<Highlight> {
                    segments
                        .iter()
                        .filter(|s| s.channel == c)
                        .cloned()
                        .collect()
                };
                // Each channel's legend lists the findings drawn on it (entry k is finding
                // k); the rest, drawn nowhere, is listed under the first channel's (a).
                let here = |segments: &[Highlight], entries: &[Option<Entry>]| -> Vec<Entry> {
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
                let options: Vec<Option<Entry>> = entries
                    .iter()
                    .take(fig.findings.len())
                    .cloned()
                    .map(Some)
                    .collect();
                let a = on(&drawn);
                let b = on(&patterns);
                let mut listed = here(&a, &options);
                if c == 0 {
                    listed.extend(entries.get(fig.findings.len()).cloned());
                }
                let mine: Vec<&Mark> = marks.iter().filter(|m| m.channel == c).collect();
                series_panel(
                    &left,
                    &channels[c],
                    (&a, &mine),
                    &listed,
                    &format!("{}: (a) findings, w_j h_j(B) summed", names[c]),
                    style,
                )?;
                series_panel(
                    &right,
                    &channels[c],
                    (&b, &[]),
                    &here(&b, &pattern_entries),
                    &format!("{}: (b) their patterns z, w_j alpha_j,z", names[c]),
                    style_b,
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

fn max_abs(segments: &[Highlight]) -> f64 {
    let m = segments.iter().map(|s| s.value.abs()).fold(0.0, f64::max);
    if m > 0.0 {
        m
    } else {
        1.0
    }
}

/// How the figure is drawn: see [`draw`].
#[derive(Clone, Copy)]
struct Style {
    bitmap: bool,
    /// The |value| drawn in the deepest colour: one for all of a figure's (a) panels, one
    /// for its (b) panels, so a colour means one value across channels.
    scale: f64,
}

/// The series in black with `segments` drawn over it, each as one line of its values
/// starting at its offset, and `marks` over them (panel (a)). Drawn smallest |value| first
/// so the strongest lie on top.
fn series_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[f64],
    (segments, marks): (&[Highlight], &[&Mark]),
    entries: &[Entry],
    caption: &str,
    style: Style,
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
    // Room above the highest point for the marks' numbers.
    let head = if marks.is_empty() { pad } else { pad * 6.0 };
    let mut chart = ChartBuilder::on(&plot)
        .caption(caption, ("sans-serif", 14).into_font())
        .margin(8)
        .x_label_area_size(24)
        .y_label_area_size(44)
        .build_cartesian_2d(
            0f64..(series.len() - 1).max(1) as f64,
            (lo - pad)..(hi + head),
        )
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 11).into_font())
        .draw()
        .map_err(draw_error)?;
    let scale = style.scale;
    // A position's band first, under the series.
    chart
        .draw_series(marks.iter().filter_map(|m| {
            let (a, b) = m.band?;
            Some(Rectangle::new(
                [(a as f64, lo - pad), (b as f64, hi + pad)],
                diverging(m.value / scale).mix(0.18).filled(),
            ))
        }))
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
    draw_highlights(&mut chart, segments, style)?;
    let font = ("sans-serif", 12).into_font();
    // Labels in rows above the series: each in the lowest row where it clears the label
    // to its left (findings close together would print over each other).
    let mut order: Vec<&&Mark> = marks.iter().collect();
    order.sort_by_key(|m| m.start);
    let mut row_ends: Vec<i32> = Vec::new();
    for m in order {
        let colour = diverging(m.value / scale);
        let end = m.end.min(series.len() - 1);
        let mid = (m.start + end) as f64 / 2.0;
        if m.dot {
            // A threshold: a dot on the matched region, its verdict in the label.
            let y = series[(m.start + end) / 2];
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((mid, y))
                        + Circle::new((0, 0), 5, colour.filled())
                        + Circle::new((0, 0), 5, BLACK.stroke_width(1)),
                ))
                .map_err(draw_error)?;
        }
        let x = chart.backend_coord(&(m.start as f64, hi)).0;
        // About 7.3 px a character of the 12 px Hack, and a gap.
        let width = m.label.chars().count() as i32 * 73 / 10 + 6;
        let row = match row_ends.iter().position(|&e| e <= x) {
            Some(r) => r,
            None => {
                row_ends.push(i32::MIN);
                row_ends.len() - 1
            }
        };
        row_ends[row] = x + width;
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((m.start as f64, hi))
                    + Text::new(
                        m.label.clone(),
                        (0, -14 - 13 * row as i32),
                        font.clone().color(&BLACK),
                    ),
            ))
            .map_err(draw_error)?;
    }
    draw_legend(&legend, entries, scale)
}

/// `segments` over the series, each one line of its values at its positions (on a bitmap,
/// one line per step), in reverse order so the first lie on top.
fn draw_highlights<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    segments: &[Highlight],
    style: Style,
) -> Result<()> {
    let scale = style.scale;
    for s in segments.iter().rev() {
        let points: Vec<(f64, f64)> = s
            .values
            .iter()
            .zip(&s.positions)
            .map(|(&v, &x)| (x as f64, v))
            .collect();
        let stroke = diverging(s.value / scale).stroke_width(3);
        if style.bitmap {
            chart
                .draw_series(
                    points
                        .windows(2)
                        .map(|w| PathElement::new(w.to_vec(), stroke)),
                )
                .map_err(draw_error)?;
        } else {
            chart
                .draw_series(std::iter::once(PathElement::new(points, stroke)))
                .map_err(draw_error)?;
        }
    }
    Ok(())
}

fn max_entry(entries: &[Entry]) -> f64 {
    entries.iter().map(|e| e.1.abs()).fold(0.0, f64::max)
}

/// A bag: per instance, the contributions of the hypotheses it maximises, stacked (votes
/// for the positive class upwards, for the negative downwards).
fn bag_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    instances: usize,
    segments: &[Highlight],
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
