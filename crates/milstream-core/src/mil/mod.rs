//! The learning core: pure, synchronous, no I/O.
//!
//! Everything here scores *bags*: a time series becomes the bag of its subsequences
//! ([`series`]), a multiple-instance record already is one ([`bag`]). The method is LPBoost
//! over kernelized shapelet hypotheses (Suehiro et al., "Multiple-Instance Learning by
//! Boosting Infinitely Many Shapelet-based Classifiers"; cited below as "the paper").

pub mod bag;
mod basis_inverse;
mod blockmax;
pub mod boxcount;
pub mod boxsvm;
pub mod cancel;
mod decision;
mod dense_rows;
pub mod derived;
pub mod ensemble;
pub mod error;
pub mod folds;
pub mod head;
pub mod incremental;
pub mod kernel;
pub mod kernel_table;
pub mod kmeans;
mod lanes;
pub mod lpboost;
pub mod miordm;
pub mod model;
pub mod params;
pub mod prediction;
pub mod prepare;
pub mod pricing;
mod rowsum;
pub mod score;
pub mod select;
pub mod series;
pub mod shapelet;
pub mod simplex;
pub mod solver;
pub mod space;
pub mod stump;
mod subfits;
pub mod svm;
mod warm_master;
pub mod weak;
mod width;

pub use bag::{Bag, Dataset, InputKind, Sample};
pub use error::MilError;
pub use kernel::Kernel;
pub use model::{
    ChannelMode, Contribution, Explanation, FitParams, Model, Prediction, ShapeletLength,
    SpaceParams, View, WeakKind,
};
