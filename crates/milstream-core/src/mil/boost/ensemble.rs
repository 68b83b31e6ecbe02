//! An ensemble: one class's binary problem of a shapelet model (one-vs-rest, footnote 3),
//! its weighted hypotheses, and what a fit concludes when no ensemble beats a constant
//! (the majority decision).

use serde::{Deserialize, Serialize};

use crate::mil::boost::stump::Threshold;

/// One weighted hypothesis of an ensemble.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedHypothesis {
    /// Index into the model's spaces.
    pub space: usize,
    /// w_j from the master LP's multipliers.
    pub weight: f64,
    /// Sparse alpha: (representative index within the space, coefficient).
    pub alpha: Vec<(u32, f64)>,
    /// Aggregates by the mean over the bag's instances instead of the max (beyond the
    /// paper; see [`crate::mil::boost::weak::best_mean`]). False in older artifacts.
    #[serde(default)]
    pub mean: bool,
    /// A threshold hypothesis: 1 or 0 by which side of a threshold the (max or mean) value
    /// falls (see [`crate::mil::boost::stump`]). Absent in older artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Threshold>,
}

impl WeightedHypothesis {
    /// h(B) from the aggregated value sum_z alpha_z K(z, x) (max or mean over the bag) and
    /// the relative position of its maximiser (see [`crate::mil::space::kernel_table::position`]).
    pub fn output(&self, value: f64, position: f64) -> f64 {
        match self.threshold {
            Some(t) => t.output(value, position),
            None => value,
        }
    }
}

/// One binary problem: `positive_class` against the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ensemble {
    pub positive_class: usize,
    pub hypotheses: Vec<WeightedHypothesis>,
    /// The summed weight of the constant hypotheses +1 and -1 (with `FitParams::bias`):
    /// g(B) = sum_j w_j h_j(B) + bias. 0 in the paper's form and older artifacts.
    #[serde(default)]
    pub bias: f64,
    pub rounds: usize,
    /// Final soft margin rho of problem (4).
    pub rho: f64,
    /// Final gamma of the dual (5), equal to the LP's optimum.
    pub gamma: f64,
    pub stop_reason: String,
    /// Rounds whose master LP the interior point solved: the simplex's optimal d was not
    /// unique, or the simplex failed (`master_fallbacks` of them). 0 in older artifacts.
    #[serde(default)]
    pub master_interior_rounds: usize,
    #[serde(default)]
    pub master_fallbacks: usize,
}

/// A final soft margin rho at or below this is no margin (the solvers leave ~1e-10 at a
/// true zero): see [`majority_fallback`].
const NO_MARGIN: f64 = 1e-6;

/// The majority decision when the ensembles have nothing better: every class's LP kept no
/// hypothesis, or only hypotheses constant over the training examples, or none reached a
/// soft margin above zero (no combination of its hypotheses
/// beats a constant, which reaches rho = 0 under the balanced margin, whatever weights the
/// LP's tie left on them). Each class's score is then its bias: the LP's where it kept
/// hypotheses' weight off a positive margin, else the majority decision's 2 n_c / n - 1
/// (its sign is the binary majority; with more classes the most frequent class scores
/// highest). The card says so in each stop reason.
pub(crate) fn majority_fallback(
    ensembles: &mut [Ensemble],
    outputs: &mut [Vec<Vec<f64>>],
    labels: &[String],
    classes: &[String],
) {
    // Hypotheses constant over the training examples tell none apart: each class's score is
    // then one number for every example, a constant decision whatever its margin (bags that
    // do not differ reach rho = 1 under the common cap with a kernel column equal to 1).
    let kept = outputs.iter().any(|o| !o.is_empty());
    let constant = kept
        && outputs
            .iter()
            .flatten()
            .all(|h| h.iter().all(|v| (v - h[0]).abs() <= 1e-12));
    let no_margin = constant || ensembles.iter().all(|e| e.rho <= NO_MARGIN);
    if no_margin {
        for (e, o) in ensembles.iter_mut().zip(outputs.iter_mut()) {
            // The tie's constant is as arbitrary as its hypotheses, also where it kept none
            // (the interior point's zero is ~1e-10 of either sign: it decided the tie).
            e.hypotheses.clear();
            e.bias = 0.0;
            o.clear();
        }
    }
    if !ensembles.iter().all(|e| e.hypotheses.is_empty()) {
        return;
    }
    let n = labels.len().max(1) as f64;
    for e in ensembles {
        if e.bias.abs() <= NO_MARGIN {
            let n_c = labels
                .iter()
                .filter(|l| **l == classes[e.positive_class])
                .count() as f64;
            e.bias = 2.0 * n_c / n - 1.0;
        }
        e.stop_reason = format!(
            "warning: no hypothesis beyond the bias, this model gives the majority \
             decision; the classes may not differ, or try another kernel width or \
             shapelet length ({})",
            e.stop_reason
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ensemble(positive_class: usize, rho: f64, bias: f64, hypotheses: usize) -> Ensemble {
        Ensemble {
            positive_class,
            hypotheses: (0..hypotheses)
                .map(|j| WeightedHypothesis {
                    space: 0,
                    weight: 1.0 / hypotheses as f64,
                    alpha: vec![(j as u32, 1.0)],
                    mean: false,
                    threshold: None,
                })
                .collect(),
            bias,
            rounds: 100,
            rho,
            gamma: 0.0,
            stop_reason: "reached the round limit (100)".into(),
            master_interior_rounds: 0,
            master_fallbacks: 0,
        }
    }

    #[test]
    fn no_soft_margin_for_any_class_gives_the_majority_decision() {
        // 19 of 20 training bags negative; the LP's tie left weight on kernel hypotheses
        // and a constant of the minority's sign (a 2,000-bag set did this).
        let classes = vec!["neg".to_string(), "pos".to_string()];
        let labels: Vec<String> = (0..20)
            .map(|i| classes[(i == 0) as usize].clone())
            .collect();
        let mut ensembles = vec![ensemble(0, -9e-11, -0.3, 3), ensemble(1, -6e-11, 0.0, 2)];
        let mut outputs = vec![vec![vec![0.5; 20]; 3], vec![vec![0.5; 20]; 2]];
        majority_fallback(&mut ensembles, &mut outputs, &labels, &classes);
        assert!(ensembles.iter().all(|e| e.hypotheses.is_empty()));
        assert!(outputs.iter().all(|o| o.is_empty()));
        assert_eq!(ensembles[0].bias, 2.0 * 19.0 / 20.0 - 1.0);
        assert_eq!(ensembles[1].bias, 2.0 * 1.0 / 20.0 - 1.0);
        assert!(ensembles[0]
            .stop_reason
            .starts_with("warning: no hypothesis beyond the bias"));

        // One class with a margin: the ensembles stand as the LP left them.
        let mut ensembles = vec![ensemble(0, -9e-11, -0.3, 3), ensemble(1, 2.9e-4, 0.0, 2)];
        let varied: Vec<f64> = (0..20).map(|i| i as f64 / 20.0).collect();
        let mut outputs = vec![vec![varied.clone(); 3], vec![varied.clone(); 2]];
        majority_fallback(&mut ensembles, &mut outputs, &labels, &classes);
        assert_eq!(
            ensembles
                .iter()
                .map(|e| e.hypotheses.len())
                .collect::<Vec<_>>(),
            [3, 2]
        );
        assert_eq!((ensembles[0].bias, outputs[0].len()), (-0.3, 3));
        assert!(!ensembles[1].stop_reason.starts_with("warning"));

        // No hypothesis kept at all (a positive-margin LP of the bias alone keeps its bias).
        let mut ensembles = vec![ensemble(0, 0.2, 0.4, 0), ensemble(1, 0.0, 0.0, 0)];
        let mut outputs = vec![Vec::new(), Vec::new()];
        majority_fallback(&mut ensembles, &mut outputs, &labels, &classes);
        assert_eq!((ensembles[0].bias, ensembles[1].bias), (0.4, -0.9));
        assert!(ensembles[1].stop_reason.starts_with("warning"));

        // No hypothesis and no margin, the interior point's zeros left as biases (a fit of
        // 175 bags, 13 % positive, did this): the majority decides, not the zeros' signs.
        let mut ensembles = vec![
            ensemble(0, -5.9e-11, -4.4e-10, 0),
            ensemble(1, 5.2e-12, -1.7e-10, 0),
        ];
        let mut outputs = vec![Vec::new(), Vec::new()];
        majority_fallback(&mut ensembles, &mut outputs, &labels, &classes);
        assert_eq!(
            (ensembles[0].bias, ensembles[1].bias),
            (2.0 * 19.0 / 20.0 - 1.0, -0.9)
        );

        // A margin reached by hypotheses equal on every training example (bags that do not
        // differ, the common cap): a constant decision, so the majority's.
        let mut ensembles = vec![ensemble(0, 1.0, 0.0, 1), ensemble(1, 1.0, 0.0, 1)];
        let mut outputs = vec![vec![vec![1.0; 20]], vec![vec![1.0; 20]]];
        majority_fallback(&mut ensembles, &mut outputs, &labels, &classes);
        assert!(ensembles.iter().all(|e| e.hypotheses.is_empty()));
        assert_eq!(ensembles[1].bias, -0.9);
        assert!(ensembles[0].stop_reason.starts_with("warning"));
        // One of them varies: the LP's model stands.
        let mut ensembles = vec![ensemble(0, 1.0, 0.0, 1), ensemble(1, 1.0, 0.0, 1)];
        let mut outputs = vec![vec![vec![1.0; 20]], vec![varied]];
        majority_fallback(&mut ensembles, &mut outputs, &labels, &classes);
        assert_eq!(ensembles[1].hypotheses.len(), 1);
    }
}
