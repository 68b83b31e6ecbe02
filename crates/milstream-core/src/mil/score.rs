//! Offline scoring of a shapelet model: every hypothesis's output on a sample (Theorem 1's
//! h(B) = max_x sum_z alpha_z K(z, x), or its mean, threshold or position), the class
//! scores (eq. 2's g(B) = sum_j w_j h_j(B) per class, or the pooled head's), the decision
//! and its explanation. The daemon's scorer (`incremental.rs`) computes the same outputs
//! window by window and shares the class scores and the decision.

use super::bag::{InputKind, Sample};
use super::error::{MilError, Result};
use super::prediction::{Contribution, Prediction};
use super::shapelet::{fixed_mean, to_fixed, ShapeletModel};
use super::space::kernel_table::position;
use super::space::series::instance_set;

impl ShapeletModel {
    /// One channel: not empty, finite. A series shorter than a shapelet is read with its
    /// last point repeated, as training reads one (space.rs).
    fn check_series(&self, v: &[f64]) -> Result<()> {
        if v.is_empty() {
            return Err(MilError::InvalidData("the series is empty".into()));
        }
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(MilError::InvalidData(format!(
                "series value {i} is not finite"
            )));
        }
        Ok(())
    }

    /// Checks that a sample fits the model's input.
    fn check_sample(&self, sample: &Sample) -> Result<()> {
        match (self.input, sample) {
            (InputKind::Multi { channels }, Sample::Multi(c)) => {
                if c.len() != channels {
                    return Err(MilError::InvalidData(format!(
                        "series has {} channels, the model takes {channels}",
                        c.len()
                    )));
                }
                if let Some(k) = c.iter().position(|v| v.len() != c[0].len()) {
                    return Err(MilError::InvalidData(format!(
                        "channel {k} has {} values, channel 0 has {}",
                        c[k].len(),
                        c[0].len()
                    )));
                }
                c.iter().try_for_each(|v| self.check_series(v))
            }
            (InputKind::Series, Sample::Series(v)) => self.check_series(v),
            (InputKind::Bag { dim }, Sample::Bag(b)) if b.dim() == dim => Ok(()),
            (InputKind::Bag { dim }, Sample::Bag(b)) => Err(MilError::InvalidData(format!(
                "bag instances have dimension {}, the model expects {dim}",
                b.dim()
            ))),
            (want, _) => Err(MilError::InvalidData(format!(
                "the model takes {want:?} input"
            ))),
        }
    }

    /// Per ensemble, per hypothesis: (h_j(B), index of the maximising instance).
    pub(crate) fn hypothesis_outputs(&self, sample: &Sample) -> Result<Vec<Vec<(f64, usize)>>> {
        self.check_sample(sample)?;
        let mut out: Vec<Vec<(f64, usize)>> = self
            .ensembles
            .iter()
            .map(|e| vec![(0.0, 0); e.hypotheses.len()])
            .collect();
        let is_series = self.input.is_series();
        let plan = super::online::incremental::plan(self);
        let mut groups: Vec<Option<(f64, usize, i128)>> = vec![None; plan.n_groups];
        for (s, space) in self.spaces.iter().enumerate() {
            if space.count == 0 {
                continue;
            }
            // Prediction takes every subsequence (stride 1): the max must see them all.
            let e = space.extraction();
            let set = instance_set(
                &[sample],
                is_series.then_some(&e),
                1,
                self.standardizer.as_ref(),
            )?;
            let n = set.n_instances();
            let mut krow = vec![0.0; n * space.count];
            for (j, r) in krow.chunks_exact_mut(space.count).enumerate() {
                space.kernel_row(set.instance(j), r);
            }
            // Hypotheses of one space and alpha (bit for bit) share their values on every
            // subsequence: the max, its first maximiser and the fixed-point sum are taken
            // once per group (the incremental scorer's groups; one-vs-rest's classes often
            // reuse a representative).
            let mut flat = 0;
            for (e, ens) in self.ensembles.iter().enumerate() {
                for (j, h) in ens.hypotheses.iter().enumerate() {
                    let g = plan.group_of[flat];
                    flat += 1;
                    if h.space != s {
                        continue;
                    }
                    let mean_group = plan.group_is_mean[g];
                    let (max, at, sum) = *groups[g].get_or_insert_with(|| {
                        let mut best = (f64::NEG_INFINITY, 0);
                        let mut sum: i128 = 0;
                        for (x, r) in krow.chunks_exact(space.count).enumerate() {
                            let v: f64 = h.alpha.iter().map(|&(z, a)| a * r[z as usize]).sum();
                            // Only a mean group reads the fixed-point sum; most are max ones.
                            if mean_group {
                                sum += i128::from(to_fixed(v));
                            }
                            if v > best.0 {
                                best = (v, x);
                            }
                        }
                        (best.0, best.1, sum)
                    });
                    let value = if h.mean { fixed_mean(sum, n) } else { max };
                    out[e][j] = (h.output(value, position(at, n)), at);
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn decide(&self, g: &[f64]) -> Prediction {
        // The decision's place (decision.rs): two classes' offset split between the two
        // scores, or one offset a class.
        let two: [f64; 2];
        let many: Vec<f64>;
        let g = if self.decision_offset != 0.0 && g.len() == 2 {
            let half = 0.5 * self.decision_offset;
            two = [g[0] - half, g[1] + half];
            &two[..]
        } else if self.class_offsets.len() == g.len() {
            many = g
                .iter()
                .zip(&self.class_offsets)
                .map(|(s, o)| s + o)
                .collect();
            &many[..]
        } else {
            g
        };
        let (scores, idx) = if self.ensembles.len() == 1 {
            (vec![-g[0], g[0]], usize::from(g[0] > 0.0))
        } else {
            let idx = (0..g.len()).fold(0, |b, i| if g[i] > g[b] { i } else { b });
            (g.to_vec(), idx)
        };
        Prediction {
            label: self.classes[idx].clone(),
            class_index: idx,
            scores,
        }
    }

    /// Every ensemble's score from its hypotheses' outputs `values[e][j]` = h_j(B): the
    /// pooled head's class scores when the model has one, else sum_j w_j h_j(B) + bias.
    pub(crate) fn scores(&self, values: &[Vec<f64>]) -> Vec<f64> {
        match &self.head {
            Some(head) => head.scores(&values.concat()),
            None => self
                .ensembles
                .iter()
                .zip(values)
                .map(|(e, v)| {
                    e.hypotheses
                        .iter()
                        .zip(v)
                        .map(|(h, v)| h.weight * v)
                        .sum::<f64>()
                        + e.bias
                })
                .collect(),
        }
    }

    /// The decision and every hypothesis's contribution from the hypotheses' outputs
    /// `values[e][j]` and maximising offsets `offsets[e][j]` (offline and in the daemon's
    /// scorer alike), sorted by |contribution|, largest first. A hypothesis is reported
    /// against its own class with w_j; with the pooled head, against the predicted class
    /// with its weight in that score and its index in model order, so the contributions add
    /// up to that score (less its bias).
    pub(crate) fn explanation(
        &self,
        values: &[Vec<f64>],
        offsets: &[Vec<usize>],
    ) -> (Prediction, Vec<Contribution>) {
        let prediction = self.decide(&self.scores(values));
        let predicted = prediction.class_index;
        let mut contributions = Vec::new();
        let mut flat = 0;
        for (e, ens) in self.ensembles.iter().enumerate() {
            for (j, h) in ens.hypotheses.iter().enumerate() {
                let (class, hypothesis, weight) = match &self.head {
                    Some(head) => (predicted, flat, head.weights[predicted][flat]),
                    None => (ens.positive_class, j, h.weight),
                };
                // The training set's mean output: the contribution is read against it.
                let mean = self.hypothesis_means.get(flat).copied().unwrap_or(0.0);
                flat += 1;
                let v = values[e][j];
                let sp = &self.spaces[h.space];
                contributions.push(Contribution {
                    class: self.classes[class].clone(),
                    hypothesis,
                    length: sp.length,
                    offset: offsets[e][j],
                    dilation: sp.dilation,
                    view: sp.view,
                    znorm: sp.znorm,
                    channel: sp.channel,
                    block: sp.block,
                    unit_exp: sp.unit_exp,
                    similarity: v,
                    weight,
                    baseline: mean,
                    contribution: weight * (v - mean),
                    asserts: match h.threshold {
                        Some(t) if t.position => super::prediction::Asserts::Position {
                            at: t.at,
                            above: t.above,
                        },
                        Some(t) => super::prediction::Asserts::Threshold {
                            at: t.at,
                            above: t.above,
                            mean: h.mean,
                        },
                        None if h.mean => super::prediction::Asserts::Mean,
                        None => super::prediction::Asserts::Match,
                    },
                });
            }
        }
        contributions.sort_by(|a, b| b.contribution.abs().total_cmp(&a.contribution.abs()));
        (prediction, contributions)
    }

    pub fn predict(&self, sample: &Sample) -> Result<Prediction> {
        let outs = self.hypothesis_outputs(sample)?;
        let values: Vec<Vec<f64>> = outs
            .iter()
            .map(|o| o.iter().map(|&(v, _)| v).collect())
            .collect();
        Ok(self.decide(&self.scores(&values)))
    }

    /// The prediction and, for every hypothesis, its maximising instance and w_j h_j(B):
    /// the data of the paper's Figure 1(a). Sorted by |contribution|, largest first.
    pub fn explain(&self, sample: &Sample) -> Result<(Prediction, Vec<Contribution>)> {
        Ok(self.explain_outputs(&self.hypothesis_outputs(sample)?))
    }

    /// [`explain`](Self::explain) from a sample's [`hypothesis_outputs`](Self::hypothesis_outputs).
    pub(crate) fn explain_outputs(
        &self,
        outs: &[Vec<(f64, usize)>],
    ) -> (Prediction, Vec<Contribution>) {
        let values: Vec<Vec<f64>> = outs
            .iter()
            .map(|o| o.iter().map(|&(v, _)| v).collect())
            .collect();
        let offsets: Vec<Vec<usize>> = outs
            .iter()
            .map(|o| o.iter().map(|&(_, x)| x).collect())
            .collect();
        self.explanation(&values, &offsets)
    }
}
