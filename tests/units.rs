//! The same data in another unit gives the same model (issue 26: data nobody tuned for).
//! Multiplying by a power of two is exact in floating point, so every step that reads the
//! data relative to its own scale (z-normalisation and its flat floor, the median-heuristic
//! widths, the bag standardizer) must give the same bits: the same scores, not only the same
//! labels. Before the flat floor followed the channel's unit, GunPoint at 2^-30 of its scale
//! read every z-normalised subsequence as flat (two more test errors), and GunPointScaled at
//! 2^-40 fell from 0.980 to 0.773.

mod common;

use milstream::mil::bag::Bag;
use milstream::mil::{Dataset, FitParams, Model, Sample};

/// `ds` with channel (or bag feature) `c` multiplied by `2^exps[c % exps.len()]`.
fn scaled(ds: &Dataset, exps: &[i32]) -> Dataset {
    let factor = |c: usize| 2f64.powi(exps[c % exps.len()]);
    let samples = ds
        .samples
        .iter()
        .map(|s| match s {
            Sample::Series(v) => Sample::Series(v.iter().map(|x| x * factor(0)).collect()),
            Sample::Multi(chs) => Sample::Multi(
                chs.iter()
                    .enumerate()
                    .map(|(c, v)| v.iter().map(|x| x * factor(c)).collect())
                    .collect(),
            ),
            Sample::Bag(b) => {
                let data = b
                    .instances()
                    .flat_map(|x| x.iter().enumerate().map(|(f, v)| v * factor(f)))
                    .collect();
                Sample::Bag(Bag::new(b.dim(), data).expect("the same shape"))
            }
        })
        .collect();
    Dataset {
        samples,
        ..ds.clone()
    }
}

/// Fits on `train` as given and scaled by each of `units`, and asserts that every test
/// case gets the same label and the same scores, bit for bit.
fn same_model_in_every_unit(name: &str, train: &Dataset, test: &Dataset, params: &FitParams) {
    let base = Model::fit(train, params).expect("fits");
    let want: Vec<_> = test
        .samples
        .iter()
        .map(|s| base.predict(s).expect("predicts"))
        .collect();
    // Past 2^+-500 the squares of the values leave f64's range: a space reads such a
    // channel in its unit (the same decisions), where before the widths came out 0 (an
    // error) or every subsequence read as flat (the majority).
    let exps: [&[i32]; 5] = [
        &[-40],
        &[30],
        &[-20, 0, 12, -3, 25, 7],
        &[-900],
        &[700, -3, -800],
    ];
    for exps in exps {
        let model = Model::fit(&scaled(train, exps), params).expect("fits in another unit");
        let test = scaled(test, exps);
        for (i, (s, want)) in test.samples.iter().zip(&want).enumerate() {
            let got = model.predict(s).expect("predicts");
            assert_eq!(
                (&got.label, &got.scores),
                (&want.label, &want.scores),
                "{name} at 2^{exps:?}: test case {i}"
            );
        }
    }
}

#[test]
fn univariate_series_in_any_unit_give_the_same_model() {
    let train = common::load("GunPoint_TRAIN.csv");
    let test = common::load("GunPoint_TEST.csv");
    same_model_in_every_unit("GunPoint", &train, &test, &FitParams::default());
}

#[test]
fn channels_in_units_of_their_own_give_the_same_model() {
    let train = common::load("BasicMotions_TRAIN.ts");
    let test = common::load("BasicMotions_TEST.ts");
    same_model_in_every_unit("BasicMotions", &train, &test, &FitParams::default());
}

#[test]
fn bag_features_in_units_of_their_own_give_the_same_model() {
    let ds = common::load("musk1.csv");
    let train_idx: Vec<usize> = (0..ds.len()).filter(|i| i % 3 != 0).collect();
    let test_idx: Vec<usize> = (0..ds.len()).filter(|i| i % 3 == 0).collect();
    let (train, test) = (ds.subset(&train_idx), ds.subset(&test_idx));
    same_model_in_every_unit("MUSK1", &train, &test, &FitParams::for_bags());
}
