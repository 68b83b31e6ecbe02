//! More than two classes: one-vs-rest (the paper's footnote 3) with arbitrary string labels.

use milstream::mil::{Dataset, FitParams, Model, Sample, ShapeletLength};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Series of length 60 with noise and one planted pattern whose shape names the class;
/// the pattern's position is random, so only a shift-invariant (shapelet) model can win.
fn three_patterns(n_per_class: usize, seed: u64) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ds = Dataset::default();
    type Pattern = (&'static str, fn(f64) -> f64);
    let patterns: [Pattern; 3] = [
        ("bump up", |t| 2.0 * (std::f64::consts::PI * t).sin()),
        ("bump down", |t| -2.0 * (std::f64::consts::PI * t).sin()),
        ("zig-zag", |t| {
            if ((t * 4.0) as usize).is_multiple_of(2) {
                1.5
            } else {
                -1.5
            }
        }),
    ];
    for i in 0..n_per_class {
        for (label, f) in &patterns {
            let mut v: Vec<f64> = (0..60).map(|_| rng.random_range(-0.3..0.3)).collect();
            let at = rng.random_range(0..48);
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
fn three_classes_one_vs_rest() {
    let train = three_patterns(10, 1);
    let test = three_patterns(20, 2);
    let params = FitParams {
        lengths: vec![ShapeletLength::Absolute(12)],
        k: Some(40),
        ..FitParams::default()
    };
    let model = Model::fit(&train, &params).unwrap();
    assert_eq!(model.classes(), &["bump down", "bump up", "zig-zag"]);
    let Model::LpboostShapelet(m) = &model else {
        panic!("an LPBoost model")
    };
    assert_eq!(m.ensembles.len(), 3, "one ensemble per class");
    let mut hits = 0;
    for (s, l) in test.samples.iter().zip(&test.labels) {
        let p = model.predict(s).unwrap();
        assert_eq!(p.scores.len(), 3);
        // The label is the class of the largest score.
        let best = (0..3).fold(0, |b, i| if p.scores[i] > p.scores[b] { i } else { b });
        assert_eq!(p.label, model.classes()[best]);
        hits += usize::from(p.label == *l);
    }
    let acc = hits as f64 / test.len() as f64;
    assert!(acc >= 0.9, "three-class accuracy {acc}");
}
