//! The library's defaults (`FitParams::default()` for series, `FitParams::for_bags()` for
//! bags): accuracy floors on the development sets with no option set, artifact round trips
//! (new artifacts, and artifacts written before the hypothesis spaces existed), lean models,
//! and the search budget. Run with `cargo test --release`.

mod common;

use std::process::Command;

use common::{data_path, load, test_accuracy};
use milstream::mil::select::cross_validate_grid;
use milstream::mil::select::folds::stratified_folds;
use milstream::mil::shapelet::LEAN_WEIGHT;
use milstream::mil::{Dataset, FitParams, Model, Sample, View};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn fit_default(name: &str) -> (Model, f64) {
    let train = load(&format!("{name}_TRAIN.csv"));
    let test = load(&format!("{name}_TEST.csv"));
    let model = Model::fit(&train, &FitParams::default()).unwrap();
    let acc = test_accuracy(&model, &test);
    eprintln!("{name} test accuracy with the defaults: {acc}");
    (model, acc)
}

#[test]
fn gunpoint_with_the_defaults() {
    // Measured 1.000, 0.993, 1.000 at seeds 0, 1, 2 (without position thresholds 0.993 at
    // all three); RDST 1.000, MiniRocket 0.993 on this machine.
    let (_, acc) = fit_default("GunPoint");
    assert!(acc >= 0.98, "GunPoint default accuracy {acc}");
}

#[test]
fn coffee_with_the_defaults() {
    // Measured 1.000 at seeds 0, 1, 2 (without position thresholds 0.964, 1.000, 1.000);
    // RDST 1.000, MiniRocket 1.000.
    let (_, acc) = fit_default("Coffee");
    assert!(acc >= 0.96, "Coffee default accuracy {acc}");
}

#[test]
fn acsf1_with_the_defaults() {
    // The long-series case (1,460 points, 10 classes). With the level spaces and the head's
    // penalty of 3 per bag measured 0.920 at seed 0 (seeds 1-4: 0.940, 0.950, 0.910, 0.920;
    // without the levels 0.940, 0.940, 0.940, 0.920 at seeds 0-3);
    // each one-vs-rest ensemble's own score, without the pooled head: 0.920 (seeds 1-3:
    // 0.940, 0.940, 0.910); without any threshold hypotheses 0.810. RDST 0.930, MiniRocket
    // 0.910, the paper's form 0.51.
    let (model, acc) = fit_default("ACSF1");
    assert!(acc >= 0.92, "ACSF1 default accuracy {acc}");
    let Model::LpboostShapelet(m) = &model else {
        panic!("an LPBoost model")
    };
    // The pooled head decides, and does at least as well as the ensembles it refits.
    assert!(m.head.is_some());
    let mut own = m.clone();
    own.head = None;
    let own_acc = test_accuracy(&Model::LpboostShapelet(own), &load("ACSF1_TEST.csv"));
    assert!(
        own_acc <= acc,
        "one-vs-rest {own_acc} against the head's {acc}"
    );
    // The head round-trips through the artifact, bit for bit.
    let back = Model::from_json(&model.to_json()).unwrap();
    assert_eq!(back, model);
    for s in load("ACSF1_TEST.csv").samples.iter().step_by(10) {
        assert_eq!(back.explain(s).unwrap(), model.explain(s).unwrap());
    }
    // The union class is used: dilated, difference and z-normalised spaces all serve.
    let hyps: Vec<_> = m.ensembles.iter().flat_map(|e| &e.hypotheses).collect();
    assert!(hyps.iter().any(|h| m.spaces[h.space].dilation > 1));
    assert!(hyps
        .iter()
        .any(|h| matches!(m.spaces[h.space].view, View::Diff | View::Lag)));
    assert!(hyps.iter().any(|h| m.spaces[h.space].znorm));
    assert!(hyps.iter().any(|h| h.mean));
    // Threshold hypotheses serve, within their share of each class's vote; none reads a
    // position, since each class has 10 training series (position_min_examples is 12).
    assert!(hyps.iter().any(|h| h.threshold.is_some()));
    assert!(!hyps.iter().any(|h| h.threshold.is_some_and(|t| t.position)));
    for e in &m.ensembles {
        let share: f64 = e
            .hypotheses
            .iter()
            .filter(|h| h.threshold.is_some())
            .map(|h| h.weight)
            .sum();
        assert!(share <= 0.5 + 1e-6, "threshold share {share}");
        assert!(e.hypotheses.iter().all(|h| h.weight <= 0.05 + 1e-6));
        // The cap holds per hypothesis: none is in an ensemble twice (a copy would carry a
        // cap of its own).
        let mut seen = std::collections::HashSet::new();
        for h in &e.hypotheses {
            let alpha: Vec<(u32, u64)> = h.alpha.iter().map(|&(z, a)| (z, a.to_bits())).collect();
            let t = h.threshold.map(|t| (t.at.to_bits(), t.above));
            assert!(
                seen.insert((h.space, h.mean, t, alpha)),
                "a hypothesis twice: {h:?}"
            );
        }
    }
}

#[test]
fn musk1_ten_fold_cv_with_the_bag_defaults() {
    // Measured 0.903 (the paper's form with tuned sigma and nu: 0.869; MILES 0.847).
    let ds = load("musk1.csv");
    let est = cross_validate_grid(&ds, &[FitParams::for_bags()], 10, 0, &|| {}).unwrap();
    eprintln!(
        "MUSK1 10-fold CV accuracy with the bag defaults {}",
        est[0].mean
    );
    assert!(
        est[0].mean >= 0.87,
        "MUSK1 default CV accuracy {}",
        est[0].mean
    );
}

/// The indices (in order) of the first `k` examples of each `(class, k)` in `ds`.
fn first_of(ds: &Dataset, take: &[(&str, usize)]) -> Vec<usize> {
    let mut chosen: Vec<usize> = take
        .iter()
        .flat_map(|&(c, k)| (0..ds.len()).filter(move |&i| ds.labels[i] == c).take(k))
        .collect();
    chosen.sort_unstable();
    chosen
}

/// Two classes of unequal size: GunPoint's train and test pooled, the first 10 series of
/// class 1 and the first 60 of class 2 the training set, the other 130 the test set.
/// Measured 0.954 with the decision placed by held-out scores (offset -0.095 in the card),
/// 0.915 where the two ensembles' scores meet (`--decision-folds 0`): 11 of the 130 test
/// series wrong against 6.
#[test]
fn two_classes_of_unequal_size_with_the_defaults() {
    let (train, test) = (load("GunPoint_TRAIN.csv"), load("GunPoint_TEST.csv"));
    let mut pooled = train.clone();
    pooled.ids.extend(test.ids);
    pooled.samples.extend(test.samples);
    pooled.labels.extend(test.labels);
    let chosen = first_of(&pooled, &[("1", 10), ("2", 60)]);
    let rest: Vec<usize> = (0..pooled.len())
        .filter(|i| chosen.binary_search(i).is_err())
        .collect();
    let model = Model::fit(&pooled.subset(&chosen), &FitParams::default()).unwrap();
    let Model::LpboostShapelet(m) = &model else {
        panic!("the default kind");
    };
    assert!(
        m.decision_offset < 0.0,
        "offset {} toward the smaller class",
        m.decision_offset
    );
    let acc = test_accuracy(&model, &pooled.subset(&rest));
    eprintln!("GunPoint, 10 against 60: test accuracy {acc}");
    assert!(
        acc >= 0.94,
        "GunPoint 10 against 60, default accuracy {acc}"
    );
}

/// Small classes among ten: ACSF1 with its classes 0, 1 and 2 cut to their first 3
/// training series (the other seven keep 10), the published test set (10 a class).
/// The small classes' scores fall short on unseen series; the decision adds each class's
/// offset from held-out scores. Measured 0.85 with the defaults (0.81 at
/// `--decision-folds 0`; RDST 0.79, MiniRocket 0.83 on this split).
#[test]
fn small_classes_among_ten_with_the_defaults() {
    let (train, test) = (load("ACSF1_TRAIN.csv"), load("ACSF1_TEST.csv"));
    let mut seen = std::collections::HashMap::new();
    let chosen: Vec<usize> = (0..train.len())
        .filter(|&i| {
            let n = seen.entry(train.labels[i].clone()).or_insert(0usize);
            *n += 1;
            !matches!(train.labels[i].as_str(), "0" | "1" | "2") || *n <= 3
        })
        .collect();
    let small = train.subset(&chosen);
    let with = Model::fit(&small, &FitParams::default()).unwrap();
    let Model::LpboostShapelet(m) = &with else {
        panic!("the default kind");
    };
    assert_eq!(m.class_offsets.len(), 10, "one offset a class");
    let without = Model::fit(
        &small,
        &FitParams {
            decision_folds: 0,
            ..FitParams::default()
        },
    )
    .unwrap();
    let (acc, acc_without) = (test_accuracy(&with, &test), test_accuracy(&without, &test));
    eprintln!(
        "ACSF1, classes 0-2 at 3 series: test accuracy {acc} (without offsets {acc_without})"
    );
    assert!(
        acc >= 0.83,
        "ACSF1 with three small classes, default accuracy {acc}"
    );
}

/// `cv` estimates the model `fit` gives: on classes of unequal size, where the fit places
/// its decision by held-out scores, each fold's accuracy is that of `Model::fit` on the
/// fold's training part (before stop 57 `cv` skipped the placement).
#[test]
fn cross_validation_folds_are_the_fits_of_their_training_parts() {
    let train = load("GunPoint_TRAIN.csv");
    let chosen = first_of(&train, &[("1", 8), ("2", 24)]);
    let ds = train.subset(&chosen);
    let params = FitParams::default();
    let (folds, seed) = (2, 0);
    let est = cross_validate_grid(&ds, std::slice::from_ref(&params), folds, seed, &|| {}).unwrap();
    let mut placed = 0;
    for (f, test) in stratified_folds(&ds.labels, folds, seed)
        .unwrap()
        .iter()
        .enumerate()
    {
        let rest: Vec<usize> = (0..ds.len())
            .filter(|i| test.binary_search(i).is_err())
            .collect();
        let model = Model::fit(&ds.subset(&rest), &params).unwrap();
        if let Model::LpboostShapelet(m) = &model {
            placed += usize::from(m.decision_offset != 0.0);
        }
        assert_eq!(
            est[0].fold_accuracies[f],
            test_accuracy(&model, &ds.subset(test)),
            "fold {f}"
        );
    }
    assert_eq!(placed, folds, "each fold's fit places its decision");
}

#[test]
fn a_default_model_round_trips_through_its_artifact() {
    let train = load("GunPoint_TRAIN.csv");
    let test = load("GunPoint_TEST.csv");
    let model = Model::fit(&train, &FitParams::default()).unwrap();
    let back = Model::from_json(&model.to_json()).unwrap();
    assert_eq!(back, model);
    for s in &test.samples {
        assert_eq!(back.explain(s).unwrap(), model.explain(s).unwrap());
    }
}

/// Removes every key this version added: what an artifact written before the hypothesis
/// spaces looked like (`spaces` is new inside the parameters only; the model's list of
/// spaces is old).
fn strip_new_keys(v: &mut serde_json::Value, in_params: bool) {
    const NEW: [&str; 9] = [
        "view",
        "dilation",
        "znorm",
        "bias",
        "mean",
        "mean_hypotheses",
        "balanced",
        "seeds_only",
        "pooled_head",
    ];
    match v {
        serde_json::Value::Object(map) => {
            for k in NEW {
                map.remove(k);
            }
            if in_params {
                map.remove("spaces");
            }
            for (k, child) in map.iter_mut() {
                strip_new_keys(child, k == "params");
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|c| strip_new_keys(c, false)),
        _ => {}
    }
}

#[test]
fn an_artifact_from_before_the_spaces_loads_as_the_papers_form() {
    let train = load("GunPoint_TRAIN.csv");
    let test = load("GunPoint_TEST.csv");
    let paper = Model::fit(
        &train,
        &FitParams {
            k: Some(30),
            max_rounds: 20,
            ..FitParams::paper()
        },
    )
    .unwrap();
    let mut old: serde_json::Value = serde_json::from_str(&paper.to_json()).unwrap();
    strip_new_keys(&mut old, false);
    let text = old.to_string();
    assert!(!text.contains("dilation") && !text.contains("znorm"));
    let loaded = Model::from_json(&text).unwrap();
    assert_eq!(loaded, paper, "missing keys default to the paper's form");
    for s in test.samples.iter().take(30) {
        assert_eq!(loaded.predict(s).unwrap(), paper.predict(s).unwrap());
    }
}

#[test]
fn lean_models_keep_no_noise_weights() {
    let (model, _) = fit_default("Coffee");
    let Model::LpboostShapelet(m) = &model else {
        panic!("an LPBoost model")
    };
    for e in &m.ensembles {
        for h in &e.hypotheses {
            assert!(h.weight > LEAN_WEIGHT, "weight {} kept", h.weight);
        }
    }
    // The kept weights are the LP's own, not renormalised: with the bias they sum to at
    // most 1, up to the interior-point solver's feasibility tolerance (Clarabel's default
    // 1e-8; the default views' model sums to 1 + 4.2e-9).
    for e in &m.ensembles {
        let s: f64 = e.hypotheses.iter().map(|h| h.weight).sum::<f64>() + e.bias.abs();
        assert!(s <= 1.0 + 1e-8, "{s}");
    }
    // Every explanation names a hypothesis that matters.
    let test = load("Coffee_TEST.csv");
    let e = model.explain(&test.samples[0]).unwrap();
    assert!(e.contributions.iter().all(|c| c.weight > LEAN_WEIGHT));
}

#[test]
fn explanations_name_offset_length_and_dilation_of_their_subsequence() {
    let (model, _) = fit_default("GunPoint");
    let test = load("GunPoint_TEST.csv");
    let Sample::Series(v) = &test.samples[0] else {
        panic!("series")
    };
    let e = model.explain(&test.samples[0]).unwrap();
    assert!(e.contributions.iter().any(|c| c.dilation > 1));
    for c in &e.contributions {
        let footprint = (c.length - 1) * c.dilation + 1 + c.view.reach(c.dilation);
        assert!(c.offset + footprint <= v.len(), "{c:?}");
    }
}

#[test]
fn search_stays_within_its_budget_and_reports_what_it_tried() {
    let out = std::env::temp_dir().join(format!("milstream-search-{}.json", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["train", "--data"])
        .arg(data_path("Coffee_TRAIN.csv"))
        .arg("--out")
        .arg(&out)
        .args(["--search", "--search-budget", "2", "--quiet"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let tried = err
        .lines()
        .filter(|l| l.starts_with("search: tried lengths"))
        .count();
    let summary = err
        .lines()
        .find(|l| l.starts_with("search: tried ") && !l.starts_with("search: tried lengths"))
        .unwrap_or_else(|| panic!("no summary line: {err}"));
    let words: Vec<&str> = summary.split_whitespace().collect();
    let n: usize = words[2].parse().unwrap();
    let total: usize = words[4].parse().unwrap();
    assert_eq!(n, tried, "{err}");
    assert!(n >= 1 && n <= total, "{summary}");
    let secs: f64 = words[8].parse().unwrap();
    // The budget bounds when a grid point may start; the last one started finishes.
    assert!(secs < 2.0 + 30.0, "{summary}");
    let _ = std::fs::remove_file(out);
}

#[test]
fn the_model_card_lists_the_spaces_the_hypotheses_use() {
    let out = std::env::temp_dir().join(format!("milstream-card-{}.json", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["train", "--data"])
        .arg(data_path("GunPoint_TRAIN.csv"))
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_milstream"))
        .arg("inspect")
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("shapelet lengths 9, and a level space\n"),
        "{text}"
    );
    assert!(text.contains("spaces      21 searched, "), "{text}");
    let listed: Vec<&str> = text.lines().filter(|l| l.starts_with("kernel ")).collect();
    assert!(!listed.is_empty() && listed.len() < 20, "{text}");
    assert!(
        listed.iter().all(|l| !l.contains(" 0 representatives")),
        "{text}"
    );
    assert!(listed.iter().any(|l| l.contains(" d=")), "{text}");
    // The threshold caps, and each class's threshold count, how many read a position and
    // their weight (within the share).
    assert!(
        text.contains("thresholds  at most 0.5 of each class's vote; every weight at most 0.05"),
        "{text}"
    );
    for line in text.lines().filter(|l| l.starts_with("  class ")) {
        let positions: Option<usize> = line
            .split(" thresholds, ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok());
        assert!(positions.is_some(), "no position count in {line}");
        let weight: f64 = line
            .split(" on a position, weight ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no threshold weight in {line}"));
        assert!(weight <= 0.5 + 1e-3, "{line}");
    }
    let _ = std::fs::remove_file(out);
}

/// Protein-like bags from ACSF1 (as `scripts/variants.py`'s ACSF1MotifBags, with simpler
/// features): 193 bags of 16 to 42 windows of 146 points, each window 9 features (level,
/// spread, range, roughness, crossings, four spectral magnitudes); 25 bags (13 %) hold 1 to
/// 3 windows of one series of the concept class `concept` among other classes' windows.
fn motif_bags(concept: &str) -> Dataset {
    let mut series: Vec<(bool, Vec<Vec<f64>>)> = Vec::new();
    for split in ["ACSF1_TRAIN.csv", "ACSF1_TEST.csv"] {
        let ds = load(split);
        for (s, label) in ds.samples.iter().zip(&ds.labels) {
            let Sample::Series(x) = s else { unreachable!() };
            let windows = x.chunks_exact(146).map(window_features).collect();
            series.push((label == concept, windows));
        }
    }
    let (inside, outside): (Vec<_>, Vec<_>) = series.into_iter().partition(|(c, _)| *c);
    // A seeded stream: the same bags on every machine.
    let mut rng = ChaCha8Rng::seed_from_u64(26);
    let mut next = |n: usize| rng.random_range(0..n);
    let mut ds = Dataset {
        ids: Vec::new(),
        samples: Vec::new(),
        labels: Vec::new(),
        channels: Vec::new(),
    };
    for b in 0..193 {
        let positive = b < 25;
        let mut values: Vec<f64> = Vec::new();
        for _ in 0..15 + next(25) {
            let w = &outside[next(outside.len())].1;
            values.extend(&w[next(w.len())]);
        }
        let motif = &inside[next(inside.len())].1;
        for _ in 0..1 + next(3) {
            let w = if positive {
                motif
            } else {
                &outside[next(outside.len())].1
            };
            values.extend(&w[next(w.len())]);
        }
        ds.ids.push(b.to_string());
        ds.samples
            .push(Sample::Bag(milstream::mil::Bag::new(9, values).unwrap()));
        ds.labels.push(if positive { "1" } else { "0" }.to_string());
    }
    ds
}

fn window_features(w: &[f64]) -> Vec<f64> {
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    let sd = (w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    let (lo, hi) = w
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let rough = w.windows(2).map(|p| (p[1] - p[0]).abs()).sum::<f64>() / n;
    let crossings = w
        .windows(2)
        .filter(|p| (p[0] - mean) * (p[1] - mean) < 0.0)
        .count() as f64;
    let magnitude = |k: f64| {
        let (re, im) = w.iter().enumerate().fold((0.0, 0.0), |(re, im), (t, v)| {
            let a = std::f64::consts::TAU * k * t as f64 / n;
            (re + v * a.cos(), im - v * a.sin())
        });
        (re * re + im * im).sqrt().ln_1p()
    };
    vec![
        mean,
        sd,
        hi - lo,
        rough,
        crossings,
        magnitude(1.0),
        magnitude(3.0),
        magnitude(10.0),
        magnitude(30.0),
    ]
}

#[test]
fn protein_like_bags_with_the_bag_defaults() {
    // Measured (10-fold CV, seed 0), the defaults' common cap against the class-balanced
    // one: concept 0 0.886 / 0.866, concept 3 0.891 / 0.850 (concepts 1 and 2: 0.845 / 0.840,
    // 0.824 / 0.794); the majority decision 0.870. The balanced cap lets the minority's
    // bags cost as much as all the others and calls more negatives positive. (With 100
    // k-means++ seeds at one width, before every instance at three widths: 0.902 / 0.823,
    // 0.886 / 0.813, 0.813 / 0.793, 0.840 / 0.799.)
    for concept in ["0", "3"] {
        let ds = motif_bags(concept);
        let balanced = FitParams {
            balanced: true,
            ..FitParams::for_bags()
        };
        let est =
            cross_validate_grid(&ds, &[FitParams::for_bags(), balanced], 10, 0, &|| {}).unwrap();
        let (defaults, balanced) = (est[0].mean, est[1].mean);
        eprintln!(
            "protein-like bags, concept {concept}: defaults {defaults:.3}, balanced {balanced:.3}"
        );
        assert!(
            defaults > 0.875 && defaults > balanced + 0.01,
            "concept {concept}: the bag defaults {defaults}, the balanced cap {balanced}"
        );
    }
}

/// With only the DC step's max hypotheses (no bias, means or thresholds), a round in which
/// no chosen space is asked ends boosting; it used to panic.
#[test]
fn a_fit_with_only_max_hypotheses_ends_when_no_space_offers_one() {
    let train = load("GunPoint_TRAIN.csv");
    let params = FitParams {
        bias: false,
        mean_hypotheses: false,
        threshold_hypotheses: false,
        position_thresholds: false,
        ..FitParams::default()
    };
    let model = Model::fit(&train, &params).unwrap();
    let acc = test_accuracy(&model, &load("GunPoint_TEST.csv"));
    assert!(acc > 0.8, "GunPoint with max hypotheses only: {acc}");
}
