//! The Page-Hinkley test (Page, "Continuous Inspection Schemes", Biometrika 1954), as River
//! 0.26's `drift.PageHinkley`: cumulative deviations from the running mean, faded by alpha,
//! against a threshold, upwards, downwards or both.

use serde::{Deserialize, Serialize};

use super::{RunningMean, Signal};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageHinkleyMode {
    /// Only an increase of the mean is a drift.
    Up,
    /// Only a decrease.
    Down,
    /// Either.
    Both,
}

/// River's defaults: `min_instances=30, delta=0.005, threshold=50.0, alpha=1-0.0001,
/// mode="both"`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageHinkleyParams {
    /// Values seen before any test.
    pub min_instances: u64,
    /// The change of the mean tolerated: each value's deviation is taken less (upwards) or
    /// plus (downwards) this much.
    pub delta: f64,
    /// A drift when the cumulative deviation moves this far from its extreme.
    pub threshold: f64,
    /// The fading factor of the cumulative deviations.
    pub alpha: f64,
    /// Which way a change counts: "up", "down" or "both".
    pub mode: PageHinkleyMode,
}

impl Default for PageHinkleyParams {
    fn default() -> Self {
        PageHinkleyParams {
            min_instances: 30,
            delta: 0.005,
            threshold: 50.0,
            alpha: 1.0 - 0.0001,
            mode: PageHinkleyMode::Both,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PageHinkley {
    params: PageHinkleyParams,
    x_mean: RunningMean,
    sum_increase: f64,
    sum_decrease: f64,
    /// `None` before the first value (River's infinity, which JSON lacks).
    min_increase: Option<f64>,
    max_decrease: f64,
    drift: bool,
}

impl PageHinkley {
    pub fn new(params: PageHinkleyParams) -> Self {
        PageHinkley {
            params,
            x_mean: RunningMean::default(),
            sum_increase: 0.0,
            sum_decrease: 0.0,
            min_increase: None,
            // River's initial value, kept for identical detection points.
            max_decrease: -1.0,
            drift: false,
        }
    }

    pub fn update(&mut self, x: f64) -> Signal {
        if self.drift {
            *self = PageHinkley::new(self.params);
        }
        self.x_mean.update(x);
        let dev = x - self.x_mean.mean;
        let p = &self.params;
        self.sum_increase = p.alpha * self.sum_increase + dev - p.delta;
        self.sum_decrease = p.alpha * self.sum_decrease + dev + p.delta;
        if self.sum_increase < self.min_increase.unwrap_or(f64::INFINITY) {
            self.min_increase = Some(self.sum_increase);
        }
        if self.sum_decrease > self.max_decrease {
            self.max_decrease = self.sum_decrease;
        }
        if self.x_mean.n >= p.min_instances as f64 {
            let up = self.sum_increase - self.min_increase.unwrap_or(f64::INFINITY);
            let down = self.max_decrease - self.sum_decrease;
            self.drift = match p.mode {
                PageHinkleyMode::Up => up > p.threshold,
                PageHinkleyMode::Down => down > p.threshold,
                PageHinkleyMode::Both => up > p.threshold || down > p.threshold,
            };
        }
        if self.drift {
            Signal::Drift
        } else {
            Signal::Stable
        }
    }

    pub fn seen(&self) -> u64 {
        self.x_mean.n as u64
    }
}
