//! Explanations against a baseline (issue 73): a hypothesis's contribution to a case is
//! w_j (h_j(B) - mean_j), its output's distance from its mean over the training set, and
//! the means' part of the score, sum_j w_j mean_j, joins the bias. A hypothesis that
//! gives every series about the same output (a level that occurs on every series) then
//! contributes about nothing, however large its weight, and the top findings are what
//! makes this case differ from the training set's average one (the "baseline" of additive
//! attributions, as in Lundberg and Lee 2017's SHAP for linear models: w_j (x_j - E[x_j])).

use rayon::prelude::*;

use super::shares::{quartiles, shown_share, TOP_FINDINGS};
use super::{bias, weight_in_score, Orientation};
use crate::mil::bag::Dataset;
use crate::mil::error::Result;
use crate::mil::shapelet::ShapeletModel;

impl ShapeletModel {
    /// Records each hypothesis's mean output over the training set `ds` (model order):
    /// `hypothesis_means`, the baseline its explanations are read against; then, from the
    /// same outputs, the share of the margin the top findings carry on it
    /// (`summary.shown_shares`, `shares.rs`). Scoring the training set is most of either,
    /// so one pass serves both (it held n x hypotheses outputs, as the tables hold n x k).
    pub fn record_training_baseline(&mut self, ds: &Dataset) -> Result<()> {
        let total: usize = self.ensembles.iter().map(|e| e.hypotheses.len()).sum();
        if ds.samples.is_empty() || total == 0 {
            self.hypothesis_means = Vec::new();
            return Ok(());
        }
        let outputs: Vec<Vec<Vec<(f64, usize)>>> = ds
            .samples
            .par_iter()
            .map(|s| self.hypothesis_outputs(s))
            .collect::<Result<_>>()?;
        let mut sum = vec![0.0; total];
        for per_sample in &outputs {
            for (k, &(v, _)) in per_sample.iter().flatten().enumerate() {
                sum[k] += v;
            }
        }
        let n = ds.samples.len() as f64;
        self.hypothesis_means = sum.into_iter().map(|s| s / n).collect();
        let shares: Vec<f64> = ds
            .samples
            .par_iter()
            .zip(&outputs)
            .map(|(s, outs)| shown_share(self, s, outs, TOP_FINDINGS))
            .collect();
        self.summary.shown_shares = quartiles(&shares, TOP_FINDINGS);
        Ok(())
    }
}

/// The oriented score's baseline: its bias plus every hypothesis's weight in it times the
/// hypothesis's training mean. The findings (read against the means), the rest and this
/// sum to `o.score` less the decision's offsets, as the bias did before the means; with a
/// zero baseline (older artifacts) it is the bias.
pub fn baseline(model: &ShapeletModel, o: &Orientation) -> f64 {
    let mut b = bias(model, o);
    if model.hypothesis_means.is_empty() {
        return b;
    }
    let mut flat = 0;
    for e in &model.ensembles {
        let class = &model.classes[e.positive_class];
        for h in &e.hypotheses {
            let mean = model.hypothesis_means.get(flat).copied().unwrap_or(0.0);
            if let Some(w) = weight_in_score(model, o, class, flat, h.weight) {
                b += w * mean;
            }
            flat += 1;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::bag::{Bag, Sample};
    use crate::mil::findings::{explanation_findings, orientation};
    use crate::mil::params::FitParams;
    use crate::mil::prediction::Explanation;

    /// Two classes of 3-feature bags: a positive bag holds one instance near (2, 2, 2) among
    /// noise, and every bag one instance near (-3, -3, -3) (a pattern of every bag, which
    /// says nothing of any one).
    fn bags(n: usize) -> Dataset {
        let mut u = crate::mil::test_draws::uniform(99);
        let mut next = || u() * 2.0 - 1.0;
        let (mut samples, mut labels) = (Vec::new(), Vec::new());
        for i in 0..n {
            let positive = i % 2 == 0;
            let mut data: Vec<f64> = (0..6 * 3).map(|_| next()).collect();
            for v in &mut data[3..6] {
                *v = -3.0 + 0.2 * *v;
            }
            if positive {
                for v in &mut data[..3] {
                    *v = 2.0 + 0.3 * *v;
                }
            }
            samples.push(Sample::Bag(Bag::new(3, data).unwrap()));
            labels.push(if positive { "1" } else { "0" }.to_string());
        }
        Dataset {
            ids: (0..n).map(|i| i.to_string()).collect(),
            samples,
            labels,
            channels: Vec::new(),
        }
    }

    /// Over the training set each hypothesis's contribution averages zero, and for every
    /// bag the findings, the rest and the baseline sum to the oriented score.
    #[test]
    fn contributions_average_zero_and_sum_with_the_baseline_to_the_score() {
        let ds = bags(30);
        let params = FitParams {
            k: Some(12),
            ..FitParams::for_bags()
        };
        let m = ShapeletModel::fit(&ds, &params).unwrap();
        let hyps: usize = m.ensembles.iter().map(|e| e.hypotheses.len()).sum();
        assert_eq!(m.hypothesis_means.len(), hyps);
        let mut sums = std::collections::HashMap::<(String, usize), f64>::new();
        for s in &ds.samples {
            let (prediction, contributions) = m.explain(s).unwrap();
            for c in &contributions {
                *sums.entry((c.class.clone(), c.hypothesis)).or_default() += c.contribution;
            }
            let e = Explanation {
                prediction,
                contributions,
            };
            let o = orientation(&m, &e.prediction);
            let (findings, other, _) = explanation_findings(&m, &e, 0, 5);
            let total = findings.iter().map(|f| f.value).sum::<f64>()
                + other.map_or(0.0, |o| o.value)
                + baseline(&m, &o);
            assert!(
                (total - o.score).abs() < 1e-9,
                "{total} against {}",
                o.score
            );
        }
        for (k, v) in sums {
            assert!(v.abs() < 1e-9, "{k:?} sums to {v} over the training set");
        }
    }

    /// An artifact without means (older ones) reads against a zero baseline: the bias.
    #[test]
    fn no_means_is_the_bias() {
        let ds = bags(20);
        let params = FitParams {
            k: Some(12),
            ..FitParams::for_bags()
        };
        let mut m = ShapeletModel::fit(&ds, &params).unwrap();
        m.hypothesis_means.clear();
        let (prediction, contributions) = m.explain(&ds.samples[0]).unwrap();
        assert!(contributions
            .iter()
            .all(|c| c.baseline == 0.0 && c.contribution == c.weight * c.similarity));
        let o = orientation(&m, &prediction);
        assert_eq!(baseline(&m, &o), bias(&m, &o));
    }
}
