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
    // Measured 1.000 with independent spaces (96 spaces, 1.10 s single-threaded); dependent
    // spaces 0.975 in 0.36 s. RDST and MiniRocket reach 1.000.
    let train = load("BasicMotions_TRAIN.csv");
    let test = load("BasicMotions_TEST.csv");
    let model = Model::fit(&train, &FitParams::default()).unwrap();
    let acc = test_accuracy(&model, &test);
    eprintln!("BasicMotions test accuracy with the defaults: {acc}");
    assert!(acc >= 0.97, "BasicMotions default accuracy {acc}");
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
