//! Incremental scoring of a sliding window over one series: per hypothesis a monotonic deque
//! keeps the maximum over the window's subsequences, so a new point costs the kernel work of
//! one new subsequence per shapelet length (O(support x l)), not of the whole window.
//!
//! The scores equal [`Model::predict`] on the window's points bit for bit: the kernel rows
//! and the alpha sums are computed by the same code in the same order, and ties keep the
//! earliest subsequence as the from-scratch argmax does.

use std::collections::VecDeque;

use super::error::{MilError, Result};
use super::model::{Contribution, Explanation, Model};
use super::shapelet::ShapeletModel;
use super::InputKind;

/// Sliding-window state of one series under one model. Holds no reference to the model, so
/// it can live in a map next to the model handle; every call takes the model it was built for.
///
/// The window is the last `window` points ([`explain`](Self::explain)), or any shorter
/// suffix whose start never moves back ([`explain_last`](Self::explain_last)), as a
/// duration window's does.
#[derive(Debug, Clone)]
pub struct WindowScorer {
    window: usize,
    /// Subsequences starting before this point index have left every window.
    window_start: u64,
    /// Points pushed so far.
    n: u64,
    /// Recent points, compacted when twice the longest shapelet; the last `max_len` are live.
    recent: Vec<f64>,
    max_len: usize,
    /// Per (ensemble, hypothesis), flattened: (subsequence start, value), values decreasing.
    deques: Vec<VecDeque<(u64, f64)>>,
    /// Kernel row scratch, per space.
    scratch: Vec<f64>,
    /// False for the kinds that take bags (MIORDM, the SVMs): their window score is not a
    /// max of per-subsequence terms one deque can maintain for every kind, so each window
    /// is scored from its points (`recent` keeps the last `window`).
    incremental: bool,
}

fn shapelet(model: &Model) -> Result<&ShapeletModel> {
    match model {
        Model::LpboostShapelet(m) if m.input == InputKind::Series => Ok(m),
        _ => Err(MilError::InvalidParameter(
            "incremental scoring needs a series shapelet model".into(),
        )),
    }
}

impl WindowScorer {
    /// A scorer for windows of `window` points; an error if the model does not score series
    /// or its longest shapelet does not fit in the window.
    pub fn new(model: &Model, window: usize) -> Result<Self> {
        if model.input() != InputKind::Series {
            return Err(MilError::InvalidParameter(
                "window scoring needs a model of series".into(),
            ));
        }
        if let Model::Miordm(super::model::BagModel {
            series: Some(sb), ..
        })
        | Model::MiSvm(super::model::BagModel {
            series: Some(sb), ..
        })
        | Model::BoxSvm(super::model::BagModel {
            series: Some(sb), ..
        }) = model
        {
            if window < sb.length {
                return Err(MilError::InvalidParameter(format!(
                    "a window of {window} points is shorter than the model's subsequences ({})",
                    sb.length
                )));
            }
            return Ok(Self {
                window,
                window_start: 0,
                n: 0,
                recent: Vec::with_capacity(2 * window),
                max_len: sb.length,
                deques: Vec::new(),
                scratch: Vec::new(),
                incremental: false,
            });
        }
        let m = shapelet(model)?;
        let max_len = m.spaces.iter().map(|s| s.length).max().unwrap_or(1);
        if window < max_len {
            return Err(MilError::InvalidParameter(format!(
                "a window of {window} points is shorter than the model's longest shapelet ({max_len})"
            )));
        }
        let n_hyp: usize = m.ensembles.iter().map(|e| e.hypotheses.len()).sum();
        let scratch = vec![0.0; m.spaces.iter().map(|s| s.count).max().unwrap_or(0)];
        Ok(Self {
            window,
            window_start: 0,
            n: 0,
            recent: Vec::with_capacity(4 * max_len),
            max_len,
            deques: vec![VecDeque::new(); n_hyp],
            scratch,
            incremental: true,
        })
    }

    /// Points pushed so far.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// True once the window holds `window` points.
    pub fn is_full(&self) -> bool {
        self.n >= self.window as u64
    }

    /// Adds the next point: one new subsequence per shapelet length enters the window.
    pub fn push(&mut self, model: &Model, x: f64) -> Result<()> {
        if !self.incremental {
            if self.recent.len() >= 2 * self.window {
                self.recent.drain(..self.recent.len() - self.window);
            }
            self.recent.push(x);
            self.n += 1;
            return Ok(());
        }
        let m = shapelet(model)?;
        if self.recent.len() >= 2 * self.max_len.max(1) {
            self.recent.drain(..self.recent.len() - self.max_len);
        }
        self.recent.push(x);
        self.n += 1;
        self.window_start = self
            .window_start
            .max(self.n.saturating_sub(self.window as u64));
        let window_start = self.window_start;
        for (s, space) in m.spaces.iter().enumerate() {
            let l = space.length;
            if (self.n as usize) < l || space.count == 0 {
                continue;
            }
            let start = self.n - l as u64;
            let sub = &self.recent[self.recent.len() - l..];
            let krow = &mut self.scratch[..space.count];
            space.kernel.row(sub, &space.representatives, krow);
            let mut q = 0;
            for e in &m.ensembles {
                for h in &e.hypotheses {
                    if h.space == s {
                        let v: f64 = h.alpha.iter().map(|&(z, a)| a * krow[z as usize]).sum();
                        let dq = &mut self.deques[q];
                        // Strict <: an equal earlier value stays in front, as the from-scratch
                        // argmax keeps the first maximiser.
                        while dq.back().is_some_and(|&(_, b)| b < v) {
                            dq.pop_back();
                        }
                        dq.push_back((start, v));
                        // The window moved by one point: at most one subsequence left it.
                        if dq.front().is_some_and(|&(st, _)| st < window_start) {
                            dq.pop_front();
                        }
                    }
                    q += 1;
                }
            }
        }
        Ok(())
    }

    /// Like [`explain`](Self::explain) for the window of the last `len` points (at most the
    /// scorer's window). The start of the window must not move back between calls: what
    /// left the window is dropped for good. None while `len` is shorter than the longest
    /// shapelet or more points than were pushed.
    pub fn explain_last(&mut self, model: &Model, len: usize) -> Result<Option<Explanation>> {
        let len = len.min(self.window);
        if len < self.max_len || (len as u64) > self.n {
            return Ok(None);
        }
        if !self.incremental {
            return self.explain_recomputed(model, len);
        }
        let start = self.n - len as u64;
        if start > self.window_start {
            self.window_start = start;
            for dq in &mut self.deques {
                while dq.front().is_some_and(|&(st, _)| st < start) {
                    dq.pop_front();
                }
            }
        }
        self.explain_from(model, self.window_start)
    }

    /// The prediction for the current window (the last `window` points) with every
    /// hypothesis's maximising subsequence (offset within the window) and contribution,
    /// largest |contribution| first; None until the window is full.
    pub fn explain(&self, model: &Model) -> Result<Option<Explanation>> {
        if !self.is_full() {
            return Ok(None);
        }
        if !self.incremental {
            return self.explain_recomputed(model, self.window);
        }
        self.explain_from(model, self.n - self.window as u64)
    }

    /// The model's explanation of the last `len` points, scored from scratch.
    fn explain_recomputed(&self, model: &Model, len: usize) -> Result<Option<Explanation>> {
        let points = self.recent[self.recent.len() - len..].to_vec();
        model.explain(&super::Sample::Series(points)).map(Some)
    }

    /// The explanation with every deque already trimmed to subsequences starting at or
    /// after `window_start` (the first point of the window).
    fn explain_from(&self, model: &Model, window_start: u64) -> Result<Option<Explanation>> {
        let m = shapelet(model)?;
        let mut g = Vec::with_capacity(m.ensembles.len());
        let mut contributions = Vec::new();
        let mut q = 0;
        for e in &m.ensembles {
            let mut ge = 0.0;
            for (j, h) in e.hypotheses.iter().enumerate() {
                let &(start, v) = self.deques[q]
                    .front()
                    .expect("a full window has a subsequence for every length");
                ge += h.weight * v;
                contributions.push(Contribution {
                    class: m.classes[e.positive_class].clone(),
                    hypothesis: j,
                    length: m.spaces[h.space].length,
                    offset: (start - window_start) as usize,
                    similarity: v,
                    weight: h.weight,
                    contribution: h.weight * v,
                });
                q += 1;
            }
            g.push(ge);
        }
        contributions.sort_by(|a, b| b.contribution.abs().total_cmp(&a.contribution.abs()));
        Ok(Some(Explanation {
            prediction: m.decide(&g),
            contributions,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::{Dataset, FitParams, Sample, ShapeletLength};

    fn toy_model() -> Model {
        let mut ds = Dataset::default();
        for i in 0..12 {
            let up = i % 2 == 0;
            let v: Vec<f64> = (0..30)
                .map(|t| {
                    let bump = if up && (t + i) % 30 >= 10 && (t + i) % 30 < 15 {
                        2.0
                    } else {
                        0.0
                    };
                    bump + ((t * 7 + i * 3) % 5) as f64 * 0.1
                })
                .collect();
            ds.ids.push(format!("s{i}"));
            ds.labels.push(if up { "up".into() } else { "flat".into() });
            ds.samples.push(Sample::Series(v));
        }
        let params = FitParams {
            lengths: vec![ShapeletLength::Absolute(5), ShapeletLength::Absolute(8)],
            k: Some(15),
            max_rounds: 15,
            ..FitParams::default()
        };
        Model::fit(&ds, &params).unwrap()
    }

    #[test]
    fn incremental_equals_from_scratch_on_every_window() {
        let model = toy_model();
        let w = 20;
        let stream: Vec<f64> = (0..200)
            .map(|t| ((t * 13 % 17) as f64 * 0.2).sin() * 2.0 + if t % 40 < 6 { 2.0 } else { 0.0 })
            .collect();
        let mut sc = WindowScorer::new(&model, w).unwrap();
        for (t, &x) in stream.iter().enumerate() {
            sc.push(&model, x).unwrap();
            let inc = sc.explain(&model).unwrap();
            if t + 1 < w {
                assert!(inc.is_none());
                continue;
            }
            let inc = inc.unwrap();
            let scratch = model
                .explain(&Sample::Series(stream[t + 1 - w..=t].to_vec()))
                .unwrap();
            assert_eq!(inc.prediction, scratch.prediction, "window ending at {t}");
            assert_eq!(
                inc.contributions, scratch.contributions,
                "window ending at {t}"
            );
        }
    }

    /// Duration windows: a window whose length varies but whose start never moves back.
    #[test]
    fn variable_windows_with_a_forward_moving_start_equal_from_scratch() {
        let model = toy_model();
        let cap = 40;
        let stream: Vec<f64> = (0..300)
            .map(|t| ((t * 7 % 23) as f64 * 0.3).cos() * 1.5 + if t % 50 < 5 { 2.0 } else { 0.0 })
            .collect();
        let mut sc = WindowScorer::new(&model, cap).unwrap();
        let mut start = 0usize;
        let mut checked = 0;
        for (t, &x) in stream.iter().enumerate() {
            sc.push(&model, x).unwrap();
            let n = t + 1;
            // The start jumps ahead irregularly, and is pulled up when the cap forces it.
            if t % 7 == 3 {
                start += (t * 5) % 9;
            }
            start = start.max(n.saturating_sub(cap)).min(n);
            if t % 3 != 0 {
                continue;
            }
            let len = n - start;
            let inc = sc.explain_last(&model, len).unwrap();
            if len < 8 {
                assert!(
                    inc.is_none(),
                    "a window of {len} points has no 8-point shapelet"
                );
                continue;
            }
            let inc = inc.unwrap();
            let scratch = model
                .explain(&Sample::Series(stream[start..n].to_vec()))
                .unwrap();
            assert_eq!(inc.prediction, scratch.prediction, "window {start}..{n}");
            assert_eq!(
                inc.contributions, scratch.contributions,
                "window {start}..{n}"
            );
            checked += 1;
        }
        assert!(checked > 50, "only {checked} windows compared");
    }

    #[test]
    fn window_shorter_than_a_shapelet_is_an_error() {
        let model = toy_model();
        assert!(WindowScorer::new(&model, 6)
            .unwrap_err()
            .to_string()
            .contains("longest shapelet (8)"));
    }
}
