//! Calibrated class probabilities (issue 73): p = softmax(a s), the decided class scores
//! `s` (`Prediction::scores`, with the decision's offsets) times one scale `a` = 1 / T fitted
//! on held-out scores of the training set (temperature scaling, Guo et al. 2017, "On
//! Calibration of Modern Neural Networks", section 4.2).
//!
//! Why one parameter: a shapelet model's class scores sit near zero (LPBoost's weights sum
//! to 1 and a margin of 0.05 is a confident one), so softmax(s) says about 1 / C for every
//! case; what is missing is the scale. A training set has a few dozen series: per-class Platt
//! (2 C parameters) or isotonic regression (a step function per class) fitted on ~30
//! held-out scores follow their noise, one scale does not, and it keeps the decision (the
//! argmax is unchanged) and every ranking. Separable held-out scores would send a to infinity
//! (probabilities of 0 and 1): the targets are smoothed as Platt (1999) smooths his, by
//! Laplace's rule of succession, (N + 1) / (N + 2) for an example's own class, which bounds
//! it. N counts every held-out example, not its class's (Platt's n_c): the one scale is
//! fitted from all N, and per-class counts capped the probability at 15 / 16 on Coffee's
//! classes of 14 and 11 / 12 on BasicMotions' of 10, which right answers on every test
//! case cannot reach (docs/CALIBRATION.md).

use serde::{Deserialize, Serialize};

/// The scale of a model's class scores into probabilities, fitted on held-out scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// a = 1 / T: p = softmax(a s).
    pub scale: f64,
    /// Held-out training examples it was fitted on.
    pub held_out: usize,
}

/// The range searched for log a: scores of 1e-3 to 1e4 per unit of probability's log-odds.
const LOG_SCALE_RANGE: (f64, f64) = (-3.0, 12.0);

impl Calibration {
    /// The scale of least held-out log loss of softmax(a s) against Laplace-smoothed targets,
    /// from `scores[i]` (decided class scores) of held-out examples of class `label[i]`.
    /// None without scores, or when every score vector is flat (nothing to scale).
    pub fn fit(scores: &[Vec<f64>], label: &[usize], classes: usize) -> Option<Self> {
        if scores.is_empty() || classes < 2 {
            return None;
        }
        let spread = scores
            .iter()
            .flat_map(|s| s.iter().map(move |v| (v - s[0]).abs()))
            .fold(0.0, f64::max);
        if !(spread > 0.0 && spread.is_finite()) {
            return None;
        }
        // As Platt (1999), section 2.2: targets (N + 1) / (N + 2) instead of 1, the rest of
        // the mass spread over the other classes; N all held-out examples (see above).
        let n = scores.len() as f64;
        let own = (n + 1.0) / (n + 2.0);
        let other = (1.0 - own) / (classes - 1) as f64;
        let loss = |log_a: f64| -> f64 {
            let a = log_a.exp();
            let mut total = 0.0;
            for (s, &y) in scores.iter().zip(label) {
                let z: Vec<f64> = s.iter().map(|v| a * v).collect();
                let lse = log_sum_exp(&z);
                for (c, zc) in z.iter().enumerate() {
                    let t = if c == y { own } else { other };
                    total -= t * (zc - lse);
                }
            }
            total / scores.len() as f64
        };
        // The loss is convex in a (the logits are linear in a), so unimodal in log a: a
        // golden-section search over LOG_SCALE_RANGE.
        let (mut lo, mut hi) = LOG_SCALE_RANGE;
        let phi = (5f64.sqrt() - 1.0) / 2.0;
        let (mut x1, mut x2) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
        let (mut f1, mut f2) = (loss(x1), loss(x2));
        while hi - lo > 1e-6 {
            if f1 <= f2 {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - phi * (hi - lo);
                f1 = loss(x1);
            } else {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + phi * (hi - lo);
                f2 = loss(x2);
            }
        }
        Some(Self {
            scale: (0.5 * (lo + hi)).exp(),
            held_out: scores.len(),
        })
    }

    /// softmax(a s) of decided class scores `s`.
    pub fn probabilities(&self, scores: &[f64]) -> Vec<f64> {
        let z: Vec<f64> = scores.iter().map(|v| self.scale * v).collect();
        softmax(&z)
    }
}

/// The probabilities of decided class scores `s` under `calibration`: softmax(a s), or
/// softmax(s) when the model has none (older artifacts, kinds without held-out fits).
pub fn probabilities(calibration: Option<&Calibration>, scores: &[f64]) -> Vec<f64> {
    match calibration {
        Some(c) => c.probabilities(scores),
        None => softmax(scores),
    }
}

pub fn softmax(z: &[f64]) -> Vec<f64> {
    let lse = log_sum_exp(z);
    z.iter().map(|v| (v - lse).exp()).collect()
}

fn log_sum_exp(z: &[f64]) -> f64 {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Labels drawn from softmax(a s) itself: the fit finds a again.
    #[test]
    fn the_fit_recovers_the_scale_that_drew_the_labels() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let a = 20.0;
        let (mut scores, mut label) = (Vec::new(), Vec::new());
        for _ in 0..20_000 {
            let s: Vec<f64> = (0..3)
                .map(|_| 0.1 * (2.0 * rng.random::<f64>() - 1.0))
                .collect();
            let p = softmax(&s.iter().map(|v| a * v).collect::<Vec<_>>());
            let (mut u, mut y) = (rng.random::<f64>(), 2);
            for (c, pc) in p.iter().enumerate() {
                u -= pc;
                if u < 0.0 {
                    y = c;
                    break;
                }
            }
            scores.push(s);
            label.push(y);
        }
        let c = Calibration::fit(&scores, &label, 3).expect("scores spread");
        assert!(
            (c.scale / a - 1.0).abs() < 0.05,
            "scale {} against {a}",
            c.scale
        );
        assert_eq!(c.held_out, 20_000);
    }

    /// Held-out scores that separate the classes give a finite scale: the smoothed targets
    /// stop it, and no probability reaches 1.
    #[test]
    fn separated_scores_give_a_finite_scale() {
        let scores: Vec<Vec<f64>> = (0..30)
            .map(|i| {
                if i % 2 == 0 {
                    vec![0.05, -0.05]
                } else {
                    vec![-0.05, 0.05]
                }
            })
            .collect();
        let label: Vec<usize> = (0..30).map(|i| i % 2).collect();
        let c = Calibration::fit(&scores, &label, 2).expect("scores spread");
        let p = c.probabilities(&[0.05, -0.05]);
        // Targets 31 / 32 (30 held-out examples): the fit gives them back.
        assert!((p[0] - 31.0 / 32.0).abs() < 1e-3, "{p:?}");
    }

    /// Flat scores have nothing to scale; probabilities sum to one and keep the argmax.
    #[test]
    fn flat_scores_are_not_calibrated_and_probabilities_keep_the_order() {
        assert_eq!(Calibration::fit(&[vec![0.0, 0.0]], &[0], 2), None);
        let c = Calibration {
            scale: 30.0,
            held_out: 10,
        };
        let p = c.probabilities(&[0.01, 0.03, -0.02]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(p[1] > p[0] && p[0] > p[2]);
        assert_eq!(probabilities(None, &[0.0, 0.0]), vec![0.5, 0.5]);
    }

    /// A fit records its calibration and its means in the artifact; an artifact without
    /// them (older ones) loads, uncalibrated (the softmax of the scores) and against a zero
    /// baseline.
    #[test]
    fn the_artifact_keeps_the_calibration_and_older_ones_load_without() {
        use crate::mil::bag::{Bag, Dataset, Sample};
        use crate::mil::{FitParams, Model};
        let mut u = crate::mil::test_draws::uniform(5);
        let mut next = || u() * 2.0 - 1.0;
        let (mut samples, mut labels) = (Vec::new(), Vec::new());
        for i in 0..30 {
            let mut data: Vec<f64> = (0..5 * 3).map(|_| next()).collect();
            if i % 2 == 0 {
                for v in &mut data[..3] {
                    *v = 1.5 + 0.5 * *v;
                }
            }
            samples.push(Sample::Bag(Bag::new(3, data).unwrap()));
            labels.push((i % 2).to_string());
        }
        let ds = Dataset {
            ids: (0..30).map(|i| i.to_string()).collect(),
            samples,
            labels,
            channels: Vec::new(),
        };
        let params = FitParams {
            k: Some(12),
            ..FitParams::for_bags()
        };
        let model = Model::fit(&ds, &params).unwrap();
        let Model::LpboostShapelet(m) = &model else {
            panic!("an lpboost fit")
        };
        let c = m.calibration.expect("30 bags in 3 folds are calibrated");
        assert_eq!(c.held_out, 30);
        assert!(c.scale.is_finite() && c.scale > 0.0);
        let json = model.to_json();
        assert_eq!(Model::from_json(&json).unwrap(), model);
        let (prediction, p) = model.predict_proba(&ds.samples[0]).unwrap();
        assert_eq!(p, c.probabilities(&prediction.scores));
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        let fields = old["model"].as_object_mut().unwrap();
        assert!(fields.remove("calibration").is_some());
        assert!(fields.remove("hypothesis_means").is_some());
        let old = Model::from_json(&old.to_string()).unwrap();
        let (prediction, p) = old.predict_proba(&ds.samples[0]).unwrap();
        assert_eq!(p, softmax(&prediction.scores));
    }
}
