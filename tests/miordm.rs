//! MIORDM (issue 6, first part) on MUSK1: 10-fold stratified CV; the paper reports 0.759.
//! Run by hand: `cargo test --release --test miordm -- --ignored --nocapture`.

mod common;

use milstream::mil::miordm::{MiordmModel, MiordmParams};
use milstream::mil::select::stratified_folds;
use milstream::mil::Sample;

/// Work in progress (issue 6): at 0.750 this sits on the floor, and the
/// representatives oscillate instead of settling (30 rounds), so it is not yet a gate.
#[test]
#[ignore = "issue 6 in progress: MUSK1 accuracy at the floor (0.750), representatives do not settle"]
fn musk1_ten_fold_accuracy() {
    let ds = common::load("musk1.csv");
    let folds = stratified_folds(&ds.labels, 10, 0).unwrap();
    let mut accs = Vec::new();
    for test in &folds {
        let train: Vec<usize> = (0..ds.len())
            .filter(|i| test.binary_search(i).is_err())
            .collect();
        // gamma = 1/d (the paper's default width, read as libsvm's gamma) gives 0.54 here on
        // [0, 1]-scaled MUSK1; gamma 1..5 gives 0.75. Which reading the paper meant is open.
        let params = MiordmParams {
            gamma: Some(1.0),
            ..MiordmParams::default()
        };
        let model = MiordmModel::fit(&ds.subset(&train), &params).unwrap();
        let hits = test
            .iter()
            .filter(|&&i| {
                let Sample::Bag(b) = &ds.samples[i] else {
                    unreachable!()
                };
                model.predict(b) == ds.labels[i]
            })
            .count();
        accs.push(hits as f64 / test.len() as f64);
    }
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    println!("MIORDM MUSK1 10-fold accuracy {mean:.4} ({accs:?})");
    assert!(mean >= 0.75, "MIORDM MUSK1 10-fold accuracy {mean:.4}");
}
