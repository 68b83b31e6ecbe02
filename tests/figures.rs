//! Explanations you can see (issue 7): the paper's Figure 1 drawn by `milstream explain
//! --out`, the data behind it, `predict --explain` and `inspect`.
//!
//! What must hold: the SVG is XML with one line per drawn subsequence and every legend
//! value; the offsets drawn are the offsets `predict --explain` reports; the contributions
//! drawn add up (with the bias, zero here) to the score; the PNG is a PNG of the figure's
//! size; a GunPoint figure renders well under a second.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

use common::{data_path, load, scratch};
use milstream::figure::{self, legend_text, Figure, Input};
use milstream::mil::model::BinaryMode;
use milstream::mil::{Dataset, FitParams, Model, Sample, ShapeletLength};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

fn milstream(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok_stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

/// A GunPoint model trained once per test binary in the paper's form (`--paper`: raw
/// contiguous subsequences, the paper's Figure 1), otherwise the CLI's defaults (two
/// classes, one-vs-rest on both: two ensembles).
fn gunpoint_model() -> &'static Path {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL.get_or_init(|| {
        let path = scratch("figures").join("gunpoint.json");
        let train = data_path("GunPoint_TRAIN.csv");
        let o = milstream(&[
            "train",
            "--data",
            train.to_str().unwrap(),
            "--out",
            path.to_str().unwrap(),
            "--paper",
            "--quiet",
        ]);
        ok_stdout(&o);
        path
    })
}

fn load_model(path: &Path) -> Model {
    Model::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn gunpoint_figure(index: usize) -> Figure {
    let model = load_model(gunpoint_model());
    let test = load("GunPoint_TEST.csv");
    let m = figure::shapelet_model(&model).unwrap();
    figure::figure(
        m,
        &test.samples[index],
        &format!("GunPoint_TEST.csv #{index}"),
        Some(&test.labels[index]),
        5,
    )
    .unwrap()
}

/// Runs `explain --index --out` into the scratch folder; returns the file and the figure
/// data the command printed.
fn explain_to(index: usize, name: &str) -> (PathBuf, Value) {
    let out = scratch("figures").join(name);
    let test = data_path("GunPoint_TEST.csv");
    let o = milstream(&[
        "explain",
        "--model",
        gunpoint_model().to_str().unwrap(),
        "--data",
        test.to_str().unwrap(),
        "--index",
        &index.to_string(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    let printed: Value = serde_json::from_str(ok_stdout(&o).trim()).unwrap();
    (out, printed)
}

/// The lines panel (a) draws: each finding's first hypothesis's segments, in the finding's
/// value; panel (b): the patterns of the findings shown.
fn drawn_findings(fig: &Figure) -> Vec<&figure::Highlight> {
    fig.findings
        .iter()
        .flat_map(|f| {
            let (class, h) = &f.hypotheses[0];
            fig.maximizers
                .iter()
                .filter(move |s| s.class == *class && s.hypothesis == *h)
        })
        .collect()
}

/// The legend entries of panel (a) as values: the findings, then the rest.
fn entry_values(fig: &Figure) -> Vec<f64> {
    fig.findings
        .iter()
        .map(|f| f.value)
        .chain(fig.other.as_ref().map(|o| o.value))
        .collect()
}

struct Polyline {
    stroke: String,
    points: Vec<(i64, i64)>,
}

fn polylines(doc: &roxmltree::Document) -> Vec<Polyline> {
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| Polyline {
            stroke: n.attribute("stroke").unwrap_or_default().to_string(),
            points: n
                .attribute("points")
                .unwrap_or_default()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').expect("x,y");
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect(),
        })
        .collect()
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_string())
        .collect()
}

fn svg_colour(c: plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The drawn subsequences of panel (a) and (b): each as (offset, point count, stroke),
/// read back from the SVG. The series is the black line with one point per value; a
/// subsequence's offset is where its first x pixel falls on the series' x pixels.
fn drawn_segments(svg: &str, series_len: usize) -> [Vec<(usize, usize, String)>; 2] {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let lines = polylines(&doc);
    let series: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.stroke == "#000000" && l.points.len() == series_len)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(series.len(), 2, "the series is drawn once per panel");
    let mut panels: [Vec<(usize, usize, String)>; 2] = Default::default();
    for (p, panel) in panels.iter_mut().enumerate() {
        let xs: Vec<i64> = lines[series[p]].points.iter().map(|q| q.0).collect();
        let end = series.get(p + 1).copied().unwrap_or(lines.len());
        for l in &lines[series[p] + 1..end] {
            if l.stroke == "#000000" {
                continue; // axes and ticks
            }
            let offset = xs
                .iter()
                .position(|&x| x == l.points[0].0)
                .expect("a subsequence starts at a point of the series");
            panel.push((offset, l.points.len(), l.stroke.clone()));
        }
    }
    panels
}

#[test]
fn svg_draws_the_top_findings_with_one_legend_entry_each() {
    let (out, printed) = explain_to(0, "gunpoint-0.svg");
    let fig = gunpoint_figure(0);
    assert_eq!(printed["figure"], serde_json::to_value(&fig).unwrap());
    let Input::Series(series) = &fig.input else {
        panic!("GunPoint is series data")
    };
    let svg = std::fs::read_to_string(&out).unwrap();
    let [a, b] = drawn_segments(&svg, series.len());
    // At most K findings and one "other" entry; one line per finding (univariate).
    assert!(!fig.findings.is_empty() && fig.findings.len() <= 5);
    assert_eq!(a.len(), fig.findings.len(), "one line per finding");
    assert_eq!(
        b.len(),
        fig.patterns.len(),
        "the patterns of the findings shown"
    );
    let shown: Vec<(String, usize)> = fig
        .findings
        .iter()
        .flat_map(|f| f.hypotheses.clone())
        .collect();
    assert!(fig
        .patterns
        .iter()
        .all(|s| shown.contains(&(s.class.clone(), s.hypothesis))));

    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts = texts(&doc);
    // Every entry ends in its value, none of which prints as zero; they and the bias sum
    // to the score in the title.
    let entries = entry_values(&fig);
    assert!(entries.len() <= 6);
    for v in &entries {
        let t = legend_text(*v);
        assert_ne!(t, legend_text(0.0));
        assert!(
            texts.iter().any(|x| x.ends_with(&t)),
            "legend entry {t} missing"
        );
    }
    let sum: f64 = entries.iter().sum::<f64>() + fig.bias;
    assert!(
        (sum - fig.score).abs() < 1e-9,
        "entries {sum} vs score {}",
        fig.score
    );
    assert_eq!(
        texts[0],
        format!(
            "GunPoint_TEST.csv #0: predicted {} (truth {})",
            fig.label,
            fig.truth.as_deref().unwrap()
        )
    );
    assert!(texts[1].contains(&legend_text(fig.score)), "{}", texts[1]);
    for f in &fig.findings {
        assert!(
            texts
                .iter()
                .any(|t| t.contains(&f.text[..f.text.len().min(20)])),
            "{}",
            f.text
        );
    }
}

#[test]
fn drawn_offsets_equal_predict_explain() {
    let index = 3;
    let (out, printed) = explain_to(index, "gunpoint-3.svg");
    let fig = gunpoint_figure(index);
    assert_eq!(printed["figure"], serde_json::to_value(&fig).unwrap());
    let Input::Series(series) = &fig.input else {
        panic!("GunPoint is series data")
    };
    let [a, b] = drawn_segments(&std::fs::read_to_string(&out).unwrap(), series.len());

    // Each finding drawn over its positions, in its entry's colour (one scale for the
    // lines and the swatches: the largest |entry|).
    let scale = entry_values(&fig)
        .iter()
        .map(|v| v.abs())
        .fold(0.0, f64::max);
    let mut want: Vec<(usize, usize, String)> = drawn_findings(&fig)
        .iter()
        .zip(&fig.findings)
        .map(|(s, f)| {
            (
                s.offset,
                s.length,
                svg_colour(figure::diverging(f.value / scale)),
            )
        })
        .collect();
    let mut got = a.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    // (b): each pattern at its best Euclidean match.
    let mut drawn_b: Vec<(usize, usize)> = b.iter().map(|d| (d.0, d.1)).collect();
    let mut want_b: Vec<(usize, usize)> =
        fig.patterns.iter().map(|s| (s.offset, s.length)).collect();
    drawn_b.sort();
    want_b.sort();
    assert_eq!(drawn_b, want_b);
    for s in &fig.patterns {
        let rep = &s.values;
        let d = |o: usize| -> f64 {
            series[o..o + rep.len()]
                .iter()
                .zip(rep)
                .map(|(x, z)| (x - z) * (x - z))
                .sum()
        };
        assert!((0..=series.len() - rep.len()).all(|o| d(s.offset) <= d(o)));
    }

    // predict --explain with every hypothesis: the same (class, hypothesis) -> offset.
    let test = data_path("GunPoint_TEST.csv");
    let o = milstream(&[
        "predict",
        "--model",
        gunpoint_model().to_str().unwrap(),
        "--data",
        test.to_str().unwrap(),
        "--explain",
        "--top",
        "1000",
    ]);
    let line: Value = serde_json::from_str(ok_stdout(&o).lines().nth(index).unwrap()).unwrap();
    let top = line["top"].as_array().unwrap();
    assert_eq!(top.len(), fig.maximizers.len());
    let mut reported: Vec<(String, u64, u64)> = top
        .iter()
        .map(|t| {
            (
                t["class"].as_str().unwrap().to_string(),
                t["hypothesis"].as_u64().unwrap(),
                t["offset"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut figured: Vec<(String, u64, u64)> = fig
        .maximizers
        .iter()
        .map(|s| (s.class.clone(), s.hypothesis as u64, s.offset as u64))
        .collect();
    reported.sort();
    figured.sort();
    assert_eq!(reported, figured);
    // The default --top is the daemon's (window.top_contributions = 3), largest first.
    let o = milstream(&[
        "predict",
        "--model",
        gunpoint_model().to_str().unwrap(),
        "--data",
        test.to_str().unwrap(),
        "--explain",
    ]);
    let line: Value = serde_json::from_str(ok_stdout(&o).lines().nth(index).unwrap()).unwrap();
    let top3: Vec<f64> = line["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["contribution"].as_f64().unwrap())
        .collect();
    assert_eq!(top3.len(), 3);
    assert!(top3.windows(2).all(|w| w[0].abs() >= w[1].abs()));
}

fn assert_sums_to_score(fig: &Figure) {
    let sum: f64 = fig.maximizers.iter().map(|s| s.value).sum::<f64>() + fig.bias;
    assert!(
        (sum - fig.score).abs() < 1e-9,
        "{}: contributions {sum} vs score {}",
        fig.id,
        fig.score
    );
    assert_eq!(
        fig.score > 0.0,
        fig.label == fig.positive,
        "{}: the score's sign is the decision",
        fig.id
    );
}

#[test]
fn contributions_sum_to_the_score_predict_reports() {
    let model = load_model(gunpoint_model());
    let m = figure::shapelet_model(&model).unwrap();
    let test = load("GunPoint_TEST.csv");
    let o = milstream(&[
        "predict",
        "--model",
        gunpoint_model().to_str().unwrap(),
        "--data",
        data_path("GunPoint_TEST.csv").to_str().unwrap(),
        "--json",
    ]);
    let lines: Vec<Value> = ok_stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), test.len());
    for (i, s) in test.samples.iter().enumerate() {
        let fig = figure::figure(m, s, &test.ids[i], None, 5).unwrap();
        assert_sums_to_score(&fig);
        // Two ensembles (one per class): the score is g(2) - g(1) as predict prints them.
        let scores = &lines[i]["scores"];
        let g = scores[1].as_f64().unwrap() - scores[0].as_f64().unwrap();
        assert!(
            (fig.score - g).abs() < 1e-9,
            "{}: {} vs {g}",
            test.ids[i],
            fig.score
        );
        assert_eq!((fig.positive.as_str(), fig.negative.as_str()), ("2", "1"));
    }
}

#[test]
fn single_binary_and_multiclass_figures_sum_to_their_scores() {
    // The paper's form: one ensemble, g itself is the score.
    let train = load("GunPoint_TRAIN.csv");
    let test = load("GunPoint_TEST.csv");
    let params = FitParams {
        binary: BinaryMode::Single,
        k: Some(30),
        ..FitParams::default()
    };
    let model = Model::fit(&train, &params).unwrap();
    let m = figure::shapelet_model(&model).unwrap();
    for (i, s) in test.samples.iter().enumerate().step_by(10) {
        let fig = figure::figure(m, s, &test.ids[i], None, 5).unwrap();
        assert!(fig.single);
        assert_eq!(fig.score, model.predict(s).unwrap().scores[1]);
        assert_sums_to_score(&fig);
    }

    // Three classes: the predicted class (warm) against the runner-up (cool). With the
    // pooled head (the default) every hypothesis weighs in both classes' scores; without
    // it only the two classes' own ensembles do.
    let ds = three_patterns(6, 1);
    for pooled_head in [true, false] {
        let params = FitParams {
            lengths: vec![ShapeletLength::Absolute(12)],
            k: Some(20),
            pooled_head,
            ..FitParams::default()
        };
        let model = Model::fit(&ds, &params).unwrap();
        let m = figure::shapelet_model(&model).unwrap();
        assert_eq!(m.head.is_some(), pooled_head);
        let hypotheses: usize = m.ensembles.iter().map(|e| e.hypotheses.len()).sum();
        for (i, s) in ds.samples.iter().enumerate() {
            let fig = figure::figure(m, s, &ds.ids[i], None, 5).unwrap();
            assert_eq!(fig.positive, fig.label);
            assert!(fig.score >= 0.0);
            let sum: f64 = fig.maximizers.iter().map(|s| s.value).sum::<f64>() + fig.bias;
            assert!((sum - fig.score).abs() < 1e-9, "{sum} vs {}", fig.score);
            if pooled_head {
                assert_eq!(fig.maximizers.len(), hypotheses);
                assert!(fig.maximizers.iter().all(|s| s.class == fig.positive));
            } else {
                assert!(fig
                    .maximizers
                    .iter()
                    .all(|s| s.class == fig.positive || s.class == fig.negative));
            }
        }
    }
}

/// Series of length 40 with noise and one planted pattern naming the class.
fn three_patterns(n_per_class: usize, seed: u64) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ds = Dataset::default();
    type Pattern = (&'static str, fn(f64) -> f64);
    let patterns: [Pattern; 3] = [
        ("up", |t| 2.0 * (std::f64::consts::PI * t).sin()),
        ("down", |t| -2.0 * (std::f64::consts::PI * t).sin()),
        ("step", |t| if t < 0.5 { 1.5 } else { -1.5 }),
    ];
    for i in 0..n_per_class {
        for (label, f) in &patterns {
            let mut v: Vec<f64> = (0..40).map(|_| rng.random_range(-0.3..0.3)).collect();
            let at = rng.random_range(0..28);
            for j in 0..12 {
                v[at + j] += f(j as f64 / 11.0);
            }
            ds.ids.push(format!("{label}-{i}"));
            ds.labels.push(label.to_string());
            ds.samples.push(Sample::Series(v));
        }
    }
    ds
}

#[test]
fn png_is_a_png_of_the_figure_size() {
    let (out, _) = explain_to(0, "gunpoint-0.png");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let (w, h) = figure::size(&gunpoint_figure(0));
    let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    assert_eq!((be(&bytes[16..20]), be(&bytes[20..24])), (w, h));
    // And it decodes, with text drawn (not just the background and lines): the title
    // row holds dark pixels.
    let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (w, h));
    let row = info.line_size;
    let title_dark = (2..20)
        .flat_map(|y| buf[y * row..(y + 1) * row].chunks(3))
        .filter(|p| p.iter().all(|&c| c < 100))
        .count();
    assert!(
        title_dark > 50,
        "the title is drawn ({title_dark} dark pixels)"
    );
}

#[test]
fn bag_figure_is_a_bar_chart_of_instance_contributions() {
    let ds = load("musk1.csv");
    let params = FitParams {
        k: Some(30),
        nu: 0.5,
        ..FitParams::default()
    };
    let model = Model::fit(&ds, &params).unwrap();
    let m = figure::shapelet_model(&model).unwrap();
    let fig = figure::figure(m, &ds.samples[0], &ds.ids[0], Some(&ds.labels[0]), 5).unwrap();
    let Input::Bag { instances } = fig.input else {
        panic!("MUSK1 is bag data")
    };
    assert!(fig.patterns.is_empty());
    assert!(fig.maximizers.iter().all(|s| s.offset < instances));
    assert_sums_to_score(&fig);
    let svg = figure::render_svg(&fig).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    // One bar segment per finding and one legend swatch per entry (the findings and the
    // rest), besides the white background.
    let coloured = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") != Some("#FFFFFF"))
        .count();
    let entries = entry_values(&fig);
    assert_eq!(coloured, drawn_findings(&fig).len() + entries.len());
    assert!(entries.len() <= 6);
    let texts = texts(&doc);
    for v in &entries {
        assert!(texts.iter().any(|t| t.ends_with(&legend_text(*v))));
    }
}

#[test]
fn gunpoint_figure_renders_well_under_a_second() {
    let model = load_model(gunpoint_model());
    let test = load("GunPoint_TEST.csv");
    let m = figure::shapelet_model(&model).unwrap();
    let t = Instant::now();
    let fig = figure::figure(m, &test.samples[0], &test.ids[0], None, 5).unwrap();
    let data = t.elapsed();
    let svg = figure::render_svg(&fig).unwrap();
    let svg_time = t.elapsed() - data;
    let t = Instant::now();
    let png = figure::render_png(&fig).unwrap();
    let png_time = t.elapsed();
    eprintln!(
        "GunPoint figure: data {:.1} ms, SVG {:.1} ms ({} bytes), PNG {:.1} ms ({} bytes)",
        data.as_secs_f64() * 1e3,
        svg_time.as_secs_f64() * 1e3,
        svg.len(),
        png_time.as_secs_f64() * 1e3,
        png.len()
    );
    assert!((data + svg_time).as_secs_f64() < 0.5);
    assert!(png_time.as_secs_f64() < 0.5);
}

#[test]
fn bad_figure_requests_fail_cleanly() {
    let model = gunpoint_model().to_str().unwrap();
    let test = data_path("GunPoint_TEST.csv");
    let out = scratch("figures").join("never.svg");
    let o = milstream(&[
        "explain",
        "--model",
        model,
        "--data",
        test.to_str().unwrap(),
        "--index",
        "150",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--index 150 is out of range") && err.contains("holds 150 samples"),
        "{err}"
    );
    assert!(!err.contains("panicked") && !out.exists(), "{err}");
    let o = milstream(&[
        "explain",
        "--model",
        model,
        "--data",
        test.to_str().unwrap(),
        "--index",
        "0",
        "--out",
        "/nonexistent-dir/fig.svg",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("writing /nonexistent-dir/fig.svg"), "{err}");
}

#[test]
fn inspect_prints_the_model_card() {
    let model = gunpoint_model().to_str().unwrap();
    let text = ok_stdout(&milstream(&["inspect", model]));
    for want in [
        "kind        lpboost",
        "classes     1, 2",
        "shapelet lengths 30",
        "margin      rho",
        "alpha coefficients are non-zero",
        "training    50 examples",
    ] {
        assert!(text.contains(want), "{want:?} missing in:\n{text}");
    }
    let card: Value =
        serde_json::from_str(ok_stdout(&milstream(&["inspect", model, "--json"])).trim()).unwrap();
    assert_eq!(card["kind"], "lpboost");
    assert_eq!(card["lengths"], serde_json::json!([30]));
    assert_eq!(card["ensembles"].as_array().unwrap().len(), 2);
    let nnz = card["sparsity"]["nonzero_alpha"].as_f64().unwrap();
    let total = card["sparsity"]["total_alpha"].as_f64().unwrap();
    let share = card["sparsity"]["share"].as_f64().unwrap();
    assert!(nnz > 0.0 && nnz <= total, "{card}");
    assert!((nnz / total - share).abs() < 1e-3, "{card}");
    assert_eq!(card["training"]["n_train"], 50);
    assert!(card["rounds"].as_u64().unwrap() >= 1);
    // `train` recorded how much of the margin the top findings carry on its 50 examples.
    let e = &card["explanations"];
    assert_eq!(
        (e["top"].as_u64(), e["n"].as_u64()),
        (Some(5), Some(50)),
        "{card}"
    );
    let (q1, median, q3) = (
        e["q1"].as_f64().unwrap(),
        e["median"].as_f64().unwrap(),
        e["q3"].as_f64().unwrap(),
    );
    assert!(0.0 < q1 && q1 <= median && median <= q3, "{e}");
    assert!(
        text.contains(&format!(
            "explanations the top 5 findings carry {:.0} % of the decision margin beyond the baseline",
            100.0 * median
        )),
        "{text}"
    );
}

/// The default model's spaces (dilations, the difference view, z-normalisation): every
/// drawn subsequence of panel (a) sits on the series points its space read (offset,
/// offset + d, ...), and the patterns of (b) on the positions of their best match.
#[test]
fn default_spaces_draw_their_subsequences_at_their_strided_positions() {
    let train = load("GunPoint_TRAIN.csv");
    let test = load("GunPoint_TEST.csv");
    let model = Model::fit(
        &train,
        &FitParams {
            binary: BinaryMode::Single,
            ..FitParams::default()
        },
    )
    .unwrap();
    let m = figure::shapelet_model(&model).unwrap();
    let mut dilated = 0;
    for i in [0, 7, 42] {
        let fig = figure::figure(m, &test.samples[i], &test.ids[i], None, 5).unwrap();
        let Input::Series(series) = &fig.input else {
            panic!("series")
        };
        let e = model.explain(&test.samples[i]).unwrap();
        for (s, c) in fig.maximizers.iter().zip(&e.contributions) {
            assert_eq!((s.offset, s.length), (c.offset, c.length));
            let d = c.dilation;
            let shift = c.view.reach(d);
            let want: Vec<usize> = (0..c.length).map(|k| c.offset + k * d + shift).collect();
            assert_eq!(s.positions, want, "{c:?}");
            let vals: Vec<f64> = want.iter().map(|&p| series[p]).collect();
            assert_eq!(s.values, vals);
            dilated += usize::from(d > 1);
        }
        for s in &fig.patterns {
            assert_eq!(s.positions.len(), s.length);
            assert!(s.positions.iter().all(|&p| p < series.len()));
            assert!(s.positions.windows(2).all(|w| w[0] < w[1]));
        }
        // The SVG draws each segment over exactly its positions: x pixels of the series'
        // own points at those indices.
        let svg = figure::render_svg(&fig).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let lines = polylines(&doc);
        let first = lines
            .iter()
            .position(|l| l.stroke == "#000000" && l.points.len() == series.len())
            .expect("the series line");
        let xs: Vec<i64> = lines[first].points.iter().map(|q| q.0).collect();
        let drawn: Vec<Vec<usize>> = lines[first + 1..]
            .iter()
            .take_while(|l| !(l.stroke == "#000000" && l.points.len() == series.len()))
            .filter(|l| l.stroke != "#000000")
            .map(|l| {
                l.points
                    .iter()
                    .map(|q| {
                        xs.iter()
                            .position(|&x| x == q.0)
                            .expect("on a series point")
                    })
                    .collect()
            })
            .collect();
        let mut want: Vec<Vec<usize>> = drawn_findings(&fig)
            .iter()
            .map(|s| s.positions.clone())
            .collect();
        let mut drawn = drawn;
        want.sort();
        drawn.sort();
        assert_eq!(drawn, want);
    }
    assert!(dilated > 0, "no dilated hypothesis was drawn");
}

/// One legend entry or caption read back from an SVG, in document order: the panel it sits
/// in (`a` or `b`), its text (wrapped lines joined), and the swatch colour before it.
#[derive(Debug)]
struct ReadEntry {
    panel: char,
    text: String,
    colour: String,
    x: Option<String>,
}

/// The title's lines, each panel's legend entries, and (panel, stroke) per coloured line.
type ReadFigure = (Vec<String>, Vec<Vec<ReadEntry>>, Vec<(char, String)>);

/// Reads an SVG figure back: the title's lines, panel (a)'s and (b)'s legend entries
/// (each panel's captions start a new panel), and the strokes of the coloured lines each
/// panel draws.
fn read_figure(svg: &str) -> ReadFigure {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let mut title = Vec::new();
    let mut panels: Vec<Vec<ReadEntry>> = Vec::new();
    let mut lines = Vec::new();
    let mut panel = ' ';
    let mut swatch: Option<String> = None;
    // A label over the series: "(k)" and a verdict; not a legend line.
    let label = |t: &str| {
        let t = t.trim_end_matches(" yes").trim_end_matches(" no");
        t.starts_with('(') && t.ends_with(')') && t[1..t.len() - 1].parse::<usize>().is_ok()
    };
    for n in doc.descendants() {
        match n.tag_name().name() {
            "text" => {
                let t = n.text().unwrap_or_default().trim().to_string();
                if t.contains("(a) findings") || t.contains("contributions w_j h_j(B)") {
                    panel = 'a';
                    panels.push(Vec::new());
                } else if t.contains("(b) their patterns") {
                    panel = 'b';
                    panels.push(Vec::new());
                } else if panel == ' ' {
                    title.push(t);
                } else if let Some(colour) = swatch.take() {
                    panels.last_mut().unwrap().push(ReadEntry {
                        panel,
                        text: t,
                        colour,
                        x: n.attribute("x").map(str::to_string),
                    });
                } else if let Some(e) = panels.last_mut().and_then(|p| p.last_mut()) {
                    // A wrapped line of the entry above starts where it does.
                    if !label(&t) && n.attribute("x").map(str::to_string) == e.x {
                        e.text.push(' ');
                        e.text.push_str(&t);
                    }
                }
            }
            "rect" if n.attribute("width") == Some("18") && n.attribute("height") == Some("4") => {
                swatch = n.attribute("fill").map(str::to_string);
            }
            "polyline" => {
                let stroke = n.attribute("stroke").unwrap_or_default();
                if stroke != "#000000" && panel != ' ' {
                    lines.push((panel, stroke.to_string()));
                }
            }
            _ => {}
        }
    }
    (title, panels, lines)
}

/// The value an entry ends in (`...: +0.1234`).
fn entry_value(text: &str) -> f64 {
    let v = text.rsplit(' ').next().unwrap();
    v.parse()
        .unwrap_or_else(|_| panic!("entry {text:?} ends in a value"))
}

/// Issue 27: with the defaults every user gets (the CLI's `train`), the figures of a
/// two-class series (GunPoint), ten classes (ACSF1, the pooled head), six channels
/// (BasicMotions) and a MUSK1 bag, read back from their SVG: at most K + 1 legend entries per
/// panel, none printing as zero, every coloured line in the colour of an entry, and panel
/// (a)'s entries (each finding once, the rest) plus the baseline summing to the title's score.
#[test]
fn default_figures_keep_their_legends_short_and_summing_to_the_score() {
    let dir = scratch("figures-defaults");
    for (train, test, index) in [
        ("GunPoint_TRAIN.csv", "GunPoint_TEST.csv", 0),
        ("ACSF1_TRAIN.csv", "ACSF1_TEST.csv", 3),
        ("BasicMotions_TRAIN.ts", "BasicMotions_TEST.ts", 3),
        ("musk1.csv", "musk1.csv", 0),
    ] {
        let model = dir.join(format!("{train}.json"));
        let data = data_path(test);
        ok_stdout(&milstream(&[
            "train",
            "--data",
            data_path(train).to_str().unwrap(),
            "--out",
            model.to_str().unwrap(),
            "--quiet",
        ]));
        let out = dir.join(format!("{test}.svg"));
        let printed = ok_stdout(&milstream(&[
            "explain",
            "--model",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--index",
            &index.to_string(),
            "--out",
            out.to_str().unwrap(),
        ]));
        // One line, naming the file and the decision.
        assert_eq!(printed.lines().count(), 1, "{printed}");
        assert!(printed.starts_with(&format!("wrote {}", out.display())));
        let svg = std::fs::read_to_string(&out).unwrap();
        let (title, panels, lines) = read_figure(&svg);
        let k = 5;
        assert!(
            title[0].starts_with(&format!("{test} #{index}: predicted ")),
            "{title:?}"
        );
        for p in &panels {
            assert!(p.len() <= k + 1, "{test}: {} entries: {p:?}", p.len());
            for e in p {
                assert_ne!(entry_value(&e.text), 0.0, "{test}: {e:?}");
            }
        }
        let swatches: Vec<&str> = panels.iter().flatten().map(|e| e.colour.as_str()).collect();
        assert!(!lines.is_empty() || test == "musk1.csv");
        for (panel, stroke) in &lines {
            assert!(
                panels
                    .iter()
                    .flatten()
                    .any(|e| e.panel == *panel && e.colour == *stroke),
                "{test}: a line in {stroke} matches no entry of panel ({panel}): {swatches:?}"
            );
        }
        // Panel (a)'s entries, each finding once (a channel lists those drawn on it).
        let mut a: Vec<&ReadEntry> = Vec::new();
        for e in panels.iter().flatten().filter(|e| e.panel == 'a') {
            if !a.iter().any(|x| x.text == e.text) {
                a.push(e);
            }
        }
        assert!(!a.is_empty() && a.len() <= k + 1, "{test}: {a:?}");
        let head = title[1..].join(" ");
        let after = |key: &str| -> Option<f64> {
            let at = head.find(key)? + key.len();
            let v: String = head[at..]
                .chars()
                .take_while(|c| !matches!(c, ' ' | ')' | ',' | ';'))
                .collect();
            Some(v.parse().unwrap())
        };
        let score = after(" = ").expect("the title states the score");
        let bias = after("(baseline ").unwrap_or(0.0);
        let sum: f64 = a.iter().map(|e| entry_value(&e.text)).sum::<f64>() + bias;
        assert!(
            (sum - score).abs() <= 1e-4 * (a.len() + 2) as f64,
            "{test}: entries and bias {sum} vs the title's {score}: {a:?} {head}"
        );
        if test == "ACSF1_TEST.csv" {
            assert!(head.contains("over the runner-up"), "{head}");
        }
    }
}
