//! Property tests of invariants: the master LP's distribution and weights, and that a model
//! survives a save/load round trip and predicts the same.

mod common;

use milstream::mil::boost::lpboost::solve_master;
use milstream::mil::model::KernelSpec;
use milstream::mil::{Dataset, FitParams, Model, Sample, ShapeletLength};
use proptest::prelude::*;

fn master_case() -> impl Strategy<Value = (Vec<f64>, Vec<Vec<f64>>, f64)> {
    (3usize..12, 1usize..6, 0.05f64..1.0).prop_flat_map(|(m, t, nu)| {
        (
            prop::collection::vec(prop::bool::ANY, m),
            prop::collection::vec(prop::collection::vec(-1.0f64..1.0, m), t),
            Just(nu),
        )
            .prop_map(|(pos, h, nu)| {
                // Both classes present.
                let mut y: Vec<f64> = pos.iter().map(|&p| if p { 1.0 } else { -1.0 }).collect();
                y[0] = 1.0;
                y[1] = -1.0;
                (y, h, nu)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn master_lp_d_is_a_capped_distribution_and_w_sums_to_one((y, h, nu) in master_case()) {
        let m = y.len();
        let s = solve_master(&y, &h, nu).unwrap();
        let cap = 1.0 / (nu * m as f64);
        let sum: f64 = s.d.iter().sum();
        prop_assert!((sum - 1.0).abs() < 1e-9);
        for &d in &s.d {
            prop_assert!(d >= 0.0 && d <= cap + 1e-7, "d {} cap {}", d, cap);
        }
        let wsum: f64 = s.w.iter().sum();
        prop_assert!((wsum - 1.0).abs() < 1e-9, "w {:?}", s.w);
        prop_assert!(s.w.iter().all(|&w| w >= 0.0));
        // gamma bounds every hypothesis's edge under d (constraint of (5)) ...
        for hj in &h {
            let edge: f64 = (0..m).map(|i| y[i] * s.d[i] * hj[i]).sum();
            prop_assert!(edge <= s.gamma + 1e-6, "edge {} gamma {}", edge, s.gamma);
        }
        // ... and strong duality: gamma = rho - (1/(nu m)) sum_i xi_i for g = sum w_j h_j.
        let margins: Vec<f64> = (0..m).map(|i| y[i] * h.iter().zip(&s.w).map(|(hj, w)| w * hj[i]).sum::<f64>()).collect();
        let xi: f64 = margins.iter().map(|&mg| (s.rho - mg).max(0.0)).sum();
        prop_assert!((s.rho - cap * xi - s.gamma).abs() < 1e-5, "rho {} xi {} gamma {}", s.rho, xi, s.gamma);
    }
}

/// Series of length 16 with a bump of height 3 at a random place for class "up", none for
/// "flat", plus noise.
fn toy_series() -> impl Strategy<Value = Dataset> {
    prop::collection::vec(
        (
            prop::bool::ANY,
            0usize..12,
            prop::collection::vec(-0.3f64..0.3, 16),
        ),
        8..14,
    )
    .prop_map(|rows| {
        let mut ds = Dataset::default();
        for (i, (up, at, noise)) in rows.into_iter().enumerate() {
            let up = up || i == 0;
            let up = up && i != 1;
            let mut v = noise;
            if up {
                v[at..at + 4].iter_mut().for_each(|x| *x += 3.0);
            }
            ds.ids.push(format!("s{i}"));
            ds.labels.push(if up { "up".into() } else { "flat".into() });
            ds.samples.push(Sample::Series(v));
        }
        ds
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn model_survives_save_load_and_predicts_the_same(ds in toy_series(), probe in prop::collection::vec(-3.0f64..3.0, 16..30)) {
        let params = FitParams {
            lengths: vec![ShapeletLength::Absolute(4), ShapeletLength::Fraction(0.5)],
            k: Some(12),
            kernel: KernelSpec::Gaussian { sigma: None, scale: 1.0 },
            max_rounds: 20,
            ..FitParams::default()
        };
        let model = Model::fit(&ds, &params).unwrap();
        let loaded = Model::from_json(&model.to_json()).unwrap();
        prop_assert_eq!(&loaded, &model);
        for s in ds.samples.iter().chain(std::iter::once(&Sample::Series(probe))) {
            let a = model.predict(s).unwrap();
            let b = loaded.predict(s).unwrap();
            prop_assert_eq!(a.label, b.label);
            prop_assert_eq!(a.scores, b.scores);
        }
        // The planted bump is learnable: the model separates its own training set.
        let hits = ds.samples.iter().zip(&ds.labels).filter(|(s, l)| model.predict(s).unwrap().label == **l).count();
        prop_assert!(hits == ds.len(), "{} of {} training series right", hits, ds.len());
    }
}
