//! Multichannel series (issue 14): BasicMotions (4 classes, 6 channels, length 100) from the
//! `.ts` and the long CSV files, with the defaults (independent spaces) and dependent
//! spaces; artifact round trips; channels named in explanations. Run with
//! `cargo test --release`.

mod common;

use common::{load, test_accuracy};
use milstream::mil::{ChannelMode, FitParams, InputKind, Model, Sample, SpaceParams};

#[test]
fn the_ts_and_long_csv_files_hold_the_same_series() {
    let ts = load("BasicMotions_TRAIN.ts");
    let csv = load("BasicMotions_TRAIN.csv");
    assert_eq!(ts.len(), 40);
    assert_eq!(ts.input_kind().unwrap(), InputKind::Multi { channels: 6 });
    assert_eq!(ts.labels, csv.labels);
    assert_eq!(ts.samples, csv.samples);
    assert_eq!(csv.channels.len(), 6);
    assert!(ts.channels.is_empty(), "a .ts header names no channels");
}

#[test]
fn basicmotions_with_the_defaults() {
    // Measured 1.000 with independent spaces at seed 0 (without threshold hypotheses
    // 1.000); dependent spaces 0.975. RDST and MiniRocket reach 1.000.
    let train = load("BasicMotions_TRAIN.csv");
    let test = load("BasicMotions_TEST.csv");
    let model = Model::fit(&train, &FitParams::default()).unwrap();
    let acc = test_accuracy(&model, &test);
    eprintln!("BasicMotions test accuracy with the defaults: {acc}");
    assert!(acc >= 0.95, "BasicMotions default accuracy {acc}");
    let Model::LpboostShapelet(m) = &model else {
        panic!("an LPBoost model")
    };
    assert_eq!(
        m.channel_names, train.channels,
        "the header's names live in the model"
    );
    // Independent spaces: each hypothesis reads one channel, and several channels serve.
    let mut used: Vec<usize> = m
        .ensembles
        .iter()
        .flat_map(|e| &e.hypotheses)
        .map(|h| m.spaces[h.space].channel)
        .collect();
    used.sort_unstable();
    used.dedup();
    assert!(used.len() > 1, "channels used {used:?}");
    // Explanations name the channel of each hypothesis.
    let e = model.explain(&test.samples[0]).unwrap();
    for c in &e.contributions {
        assert!(c.channel < 6 && c.block == 0);
    }
    assert!(e.contributions.iter().any(|c| c.channel > 0));
    let back = Model::from_json(&model.to_json()).unwrap();
    assert_eq!(back, model);
    for s in &test.samples {
        assert_eq!(back.explain(s).unwrap(), model.explain(s).unwrap());
    }
}

#[test]
fn dependent_spaces_read_the_block_of_all_channels() {
    let train = load("BasicMotions_TRAIN.ts");
    let test = load("BasicMotions_TEST.ts");
    let params = FitParams {
        spaces: SpaceParams {
            channels: ChannelMode::Dependent,
            ..SpaceParams::default()
        },
        ..FitParams::default()
    };
    let model = Model::fit(&train, &params).unwrap();
    let acc = test_accuracy(&model, &test);
    eprintln!("BasicMotions test accuracy with dependent spaces: {acc}");
    assert!(acc >= 0.9, "BasicMotions dependent accuracy {acc}");
    let Model::LpboostShapelet(m) = &model else {
        panic!("an LPBoost model")
    };
    assert!(m
        .spaces
        .iter()
        .all(|s| s.block == 6 && s.representatives.len() == s.count * 6 * s.length));
    let text = model.to_json();
    assert!(text.contains("\"dependent\""));
    assert_eq!(Model::from_json(&text).unwrap(), model);
}

#[test]
fn a_sample_with_another_channel_count_is_refused() {
    let train = load("BasicMotions_TRAIN.ts");
    let model = Model::fit(
        &train,
        &FitParams {
            max_rounds: 5,
            ..FitParams::default()
        },
    )
    .unwrap();
    let Sample::Multi(c) = &train.samples[0] else {
        panic!("multichannel")
    };
    let five = Sample::Multi(c[..5].to_vec());
    let err = model.predict(&five).unwrap_err().to_string();
    assert!(err.contains("5 channels") && err.contains("6"), "{err}");
    assert!(model.predict(&Sample::Series(c[0].clone())).is_err());
}

#[test]
fn univariate_artifacts_carry_no_channel_keys() {
    let train = load("Coffee_TRAIN.csv");
    let model = Model::fit(
        &train,
        &FitParams {
            max_rounds: 5,
            ..FitParams::default()
        },
    )
    .unwrap();
    let text = model.to_json();
    for key in ["\"channel\"", "\"block\"", "\"channels\"", "channel_names"] {
        assert!(!text.contains(key), "{key} in a univariate artifact");
    }
}

/// The coloured lines of each panel of a multichannel SVG figure, in drawing order: for
/// every black line of `series_len` points (one series per panel), the number of points of
/// each non-black line drawn after it.
fn panel_lines(svg: &str, series_len: usize) -> Vec<Vec<usize>> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let mut panels: Vec<Vec<usize>> = Vec::new();
    for n in doc.descendants().filter(|n| n.has_tag_name("polyline")) {
        let stroke = n.attribute("stroke").unwrap_or_default();
        let points = n
            .attribute("points")
            .unwrap_or_default()
            .split_whitespace()
            .count();
        if stroke == "#000000" {
            if points == series_len {
                panels.push(Vec::new());
            }
        } else if let Some(p) = panels.last_mut() {
            p.push(points);
        }
    }
    panels
}

/// Figure 1 per channel: one row of panels (a) and (b) per channel, named by the header;
/// every segment drawn on its space's channel at its values; a dependent space's segment
/// on every channel.
fn check_channel_figure(model: &Model, sample: &Sample, names: &[String]) {
    use milstream::figure;
    let m = figure::shapelet_model(model).unwrap();
    let fig = figure::figure(m, sample, "bm", None, 5).unwrap();
    let Sample::Multi(channels) = sample else {
        panic!("multichannel")
    };
    let figure::Input::Multi { names: drawn, .. } = &fig.input else {
        panic!("a multichannel figure")
    };
    assert_eq!(drawn, names);
    let e = model.explain(sample).unwrap();
    for s in fig.maximizers.iter().chain(&fig.patterns) {
        assert!(s.channel < 6);
        assert_eq!(s.positions.len(), s.length);
    }
    for s in &fig.maximizers {
        let values: Vec<f64> = s
            .positions
            .iter()
            .map(|&i| channels[s.channel][i])
            .collect();
        assert_eq!(
            s.values, values,
            "a matched subsequence is the channel's own values"
        );
        let c = e
            .contributions
            .iter()
            .find(|c| c.class == s.class && c.hypothesis == s.hypothesis)
            .expect("every drawn segment is a contribution");
        if c.block == 0 {
            assert_eq!(s.channel, c.channel);
        }
    }
    for c in e.contributions.iter().filter(|c| c.block > 0) {
        let on = fig
            .maximizers
            .iter()
            .filter(|s| s.class == c.class && s.hypothesis == c.hypothesis)
            .count();
        assert!(
            on == 0 || on == c.block,
            "a block is drawn on all its channels"
        );
    }
    let svg = figure::render_svg(&fig).unwrap();
    for name in names {
        for panel in ["(a) findings", "(b) their patterns"] {
            assert!(svg.contains(&format!("{name}: {panel}")), "{name}: {panel}");
        }
    }
    let panels = panel_lines(&svg, channels[0].len());
    assert_eq!(panels.len(), 12, "two panels per channel");
    // Panel (a) draws the findings shown (each finding's first hypothesis, on every channel
    // it spans), panel (b) their patterns.
    let findings: Vec<figure::Highlight> = fig
        .findings
        .iter()
        .flat_map(|f| {
            let (class, h) = f.hypotheses[0].clone();
            fig.maximizers
                .iter()
                .filter(move |s| s.class == class && s.hypothesis == h)
                .cloned()
        })
        .collect();
    assert!(!findings.is_empty() && fig.findings.len() <= 5);
    for (c, pair) in panels.chunks(2).enumerate() {
        for (lines, segments) in pair.iter().zip([&findings, &fig.patterns]) {
            let mut want: Vec<usize> = segments
                .iter()
                .filter(|s| s.channel == c)
                .map(|s| s.length)
                .collect();
            let mut got = lines.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "channel {c}: one line per segment");
        }
    }
}

#[test]
fn explain_draws_one_row_of_panels_per_channel() {
    let train = load("BasicMotions_TRAIN.csv");
    let test = load("BasicMotions_TEST.csv");
    let model = Model::fit(&train, &FitParams::default()).unwrap();
    check_channel_figure(&model, &test.samples[3], &train.channels);
    let dependent = FitParams {
        spaces: SpaceParams {
            channels: ChannelMode::Dependent,
            ..SpaceParams::default()
        },
        ..FitParams::default()
    };
    let ts = load("BasicMotions_TRAIN.ts");
    let model = Model::fit(&ts, &dependent).unwrap();
    let names: Vec<String> = (0..6).map(|c| format!("channel {c}")).collect();
    check_channel_figure(&model, &test.samples[3], &names);
}

/// The bag kinds take multichannel series as bags of channels x length instances (each
/// channel's subsequence over the same steps): two BasicMotions classes, each former binary
/// kind, an accuracy floor; the artifact round trip; and the daemon's window scorer gives
/// the offline prediction of every window. Measured: MIORDM 0.95, MI-SVM, mi-SVM and the
/// box SVM 1.00 (20 test series); the floor is 0.9.
#[test]
fn bag_kinds_take_multichannel_series_as_bags_of_blocks() {
    use milstream::mil::model::{ModelKind, ShapeletLength};
    use milstream::mil::online::incremental::WindowScorer;
    let two = |ds: milstream::mil::Dataset| {
        let keep: Vec<usize> = (0..ds.len())
            .filter(|&i| ds.labels[i] == "Standing" || ds.labels[i] == "Running")
            .collect();
        ds.subset(&keep)
    };
    let train = two(load("BasicMotions_TRAIN.csv"));
    let test = two(load("BasicMotions_TEST.csv"));
    assert_eq!(train.len(), 20);
    for kind in [
        ModelKind::Miordm,
        ModelKind::Misvm,
        ModelKind::MiSvm,
        ModelKind::Boxsvm,
    ] {
        let params = FitParams {
            kind,
            lengths: vec![ShapeletLength::Absolute(20)],
            stride: 5,
            ..FitParams::default()
        };
        let t = std::time::Instant::now();
        let model = Model::fit(&train, &params).unwrap();
        assert_eq!(model.input(), InputKind::Multi { channels: 6 });
        let acc = test_accuracy(&model, &test);
        eprintln!(
            "{}: Standing vs Running accuracy {acc} ({:.2} s)",
            model.kind_name(),
            t.elapsed().as_secs_f64()
        );
        assert!(acc >= 0.9, "{} accuracy {acc}", model.kind_name());
        let back = Model::from_json(&model.to_json()).unwrap();
        assert_eq!(back, model);
        let e = model.explain(&test.samples[0]).unwrap();
        assert!(e.contributions.iter().all(|c| c.block == 6));
        // A stream of two test series back to back, windows of 60 points.
        let Sample::Multi(a) = &test.samples[0] else {
            panic!("multichannel")
        };
        let Sample::Multi(b) = &test.samples[15] else {
            panic!("multichannel")
        };
        let stream: Vec<Vec<f64>> = (0..200)
            .map(|t| {
                (0..6)
                    .map(|c| if t < 100 { a[c][t] } else { b[c][t - 100] })
                    .collect()
            })
            .collect();
        let mut sc = WindowScorer::new(&model, 60).unwrap();
        assert!(sc.push_point(&model, &[1.0]).is_err());
        for (t, x) in stream.iter().enumerate() {
            sc.push_point(&model, x).unwrap();
            // Every 10th window: the box kernel's from-scratch explain is slow.
            if t % 10 != 0 {
                continue;
            }
            let Some(inc) = sc.explain(&model).unwrap() else {
                continue;
            };
            let window = Sample::Multi(
                (0..6)
                    .map(|c| stream[t + 1 - 60..=t].iter().map(|p| p[c]).collect())
                    .collect(),
            );
            assert_eq!(inc, model.explain(&window).unwrap(), "window ending at {t}");
        }
    }
    // A univariate series is refused by a multichannel bag model, with the counts.
    let model = Model::fit(
        &train,
        &FitParams {
            kind: ModelKind::Misvm,
            lengths: vec![ShapeletLength::Absolute(20)],
            stride: 5,
            ..FitParams::default()
        },
    )
    .unwrap();
    let err = model.predict(&Sample::Series(vec![0.0; 100])).unwrap_err();
    assert!(err.to_string().contains("6 channel"), "{err}");
}
