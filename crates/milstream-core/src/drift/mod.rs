//! Concept-drift detectors: pure, synchronous, small serializable state.
//!
//! Each follows River 0.26 (`river.drift`) step for step, so the same input sequence gives
//! the same detection points (checked by `tests/drift_oracle.rs` against River itself):
//! [`Adwin`] (`drift.ADWIN`), [`Ddm`] (`drift.binary.DDM`), [`PageHinkley`]
//! (`drift.PageHinkley`). As in River, a detector that reported a drift starts over at its
//! next update.

mod adwin;
mod ddm;
mod page_hinkley;
mod psi;

use serde::{Deserialize, Serialize};

pub use adwin::{Adwin, AdwinParams};
pub use ddm::{Ddm, DdmParams};
pub use page_hinkley::{PageHinkley, PageHinkleyMode, PageHinkleyParams};
pub use psi::{PsiTest, ScoreBins, PSI_FLOOR};

/// What a detector says after an update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Signal {
    /// In control.
    Stable,
    /// Out of the warning bound (DDM only): time to start training a candidate.
    Warning,
    /// The distribution changed.
    Drift,
}

impl Signal {
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Stable => "stable",
            Signal::Warning => "warning",
            Signal::Drift => "drift",
        }
    }
}

/// River's `stats.Mean` with unit weights: the same rounding as `mean += (1/n) * (x - mean)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunningMean {
    pub n: f64,
    pub mean: f64,
}

impl RunningMean {
    pub fn update(&mut self, x: f64) {
        self.n += 1.0;
        self.mean += (1.0 / self.n) * (x - self.mean);
    }
}

/// A detector on a stream of numbers, chosen by configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detector {
    Adwin(Adwin),
    Ddm(Ddm),
    PageHinkley(PageHinkley),
}

impl Detector {
    /// Feeds one value (an error as 0/1 for DDM) and says where the stream stands.
    pub fn update(&mut self, x: f64) -> Signal {
        match self {
            Detector::Adwin(d) => d.update(x),
            Detector::Ddm(d) => d.update(x != 0.0),
            Detector::PageHinkley(d) => d.update(x),
        }
    }

    /// How many values it has seen since it last started over.
    pub fn seen(&self) -> u64 {
        match self {
            Detector::Adwin(d) => d.seen(),
            Detector::Ddm(d) => d.seen(),
            Detector::PageHinkley(d) => d.seen(),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Detector::Adwin(_) => "adwin",
            Detector::Ddm(_) => "ddm",
            Detector::PageHinkley(_) => "page_hinkley",
        }
    }
}
