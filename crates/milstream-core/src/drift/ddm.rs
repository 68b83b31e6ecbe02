//! DDM, the Drift Detection Method (Gama et al., "Learning with Drift Detection", SBIA 2004),
//! as River 0.26's `drift.binary.DDM`: the error rate p and its Bernoulli deviation s; a
//! warning when p + s > p_min + 2 s_min, a drift at 3 s_min.

use serde::{Deserialize, Serialize};

use super::{RunningMean, Signal};

/// River's defaults: `warm_start=30, warning_threshold=2.0, drift_threshold=3.0`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DdmParams {
    /// Errors seen before any test.
    pub warm_start: u64,
    /// A warning while the error rate plus its standard deviation exceeds the lowest such
    /// sum's rate by more than this many of its standard deviations.
    pub warning_threshold: f64,
    /// A drift at this many standard deviations.
    pub drift_threshold: f64,
}

impl Default for DdmParams {
    fn default() -> Self {
        DdmParams {
            warm_start: 30,
            warning_threshold: 2.0,
            drift_threshold: 3.0,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ddm {
    params: DdmParams,
    p: RunningMean,
    p_min: f64,
    s_min: f64,
    /// p_min + s_min; `None` before the first test (River's infinity, which JSON lacks).
    ps_min: Option<f64>,
    warning: bool,
    drift: bool,
}

impl Ddm {
    pub fn new(params: DdmParams) -> Self {
        Ddm {
            params,
            p: RunningMean::default(),
            // River starts them at None: the first test always assigns them (ps_min is
            // infinite), so any finite start is the same (and serializes; NaN would not).
            p_min: 0.0,
            s_min: 0.0,
            ps_min: None,
            warning: false,
            drift: false,
        }
    }

    /// One prediction's outcome: `true` when it was wrong.
    pub fn update(&mut self, error: bool) -> Signal {
        if self.drift {
            *self = Ddm::new(self.params);
        }
        self.p.update(if error { 1.0 } else { 0.0 });
        let p_i = self.p.mean;
        let n = self.p.n;
        let s_i = (p_i * (1.0 - p_i) / n).sqrt();
        if n > self.params.warm_start as f64 {
            if p_i + s_i <= self.ps_min.unwrap_or(f64::INFINITY) {
                self.p_min = p_i;
                self.s_min = s_i;
                self.ps_min = Some(self.p_min + self.s_min);
            }
            self.warning = p_i + s_i > self.p_min + self.params.warning_threshold * self.s_min;
            if p_i + s_i > self.p_min + self.params.drift_threshold * self.s_min {
                self.drift = true;
                self.warning = false;
            }
        }
        // River keeps the warning flag of the last test while warming up after a reset
        // (it was cleared by the reset), so reading the flags is enough.
        if self.drift {
            Signal::Drift
        } else if self.warning {
            Signal::Warning
        } else {
            Signal::Stable
        }
    }

    pub fn seen(&self) -> u64 {
        self.p.n as u64
    }
}
