//! The learning core: pure, synchronous, no I/O.
//!
//! Everything here scores *bags*: a time series becomes the bag of its subsequences
//! ([`series`]), a multiple-instance record already is one ([`bag`]). The method is LPBoost
//! over kernelized shapelet hypotheses (Suehiro et al., "Multiple-Instance Learning by
//! Boosting Infinitely Many Shapelet-based Classifiers"; cited below as "the paper").

pub mod bag;
pub mod boost;
pub mod calibration;
pub mod cancel;
pub mod error;
pub mod findings;
pub mod kinds;
pub mod lp;
pub mod model;
pub mod online;
pub mod params;
pub mod prediction;
pub mod score;
pub mod select;
pub mod shapelet;
pub mod space;
#[cfg(test)]
pub(crate) mod test_draws;

pub use bag::{Bag, Dataset, InputKind, Sample};
pub use error::MilError;
pub use model::{
    ChannelMode, Contribution, Explanation, FitParams, Model, Prediction, ShapeletLength,
    SpaceParams, View, WeakKind,
};
pub use space::kernel::Kernel;
