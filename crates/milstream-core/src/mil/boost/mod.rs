//! The LPBoost core (Suehiro et al., Algorithm 1): the column generation over the master LP
//! (`lpboost`), the weak learner that prices hypotheses and runs the DC step (`weak`,
//! Algorithm 2), the threshold hypotheses it returns (`stump`), one class's boosting over the
//! union of spaces (`union`), its weighted ensemble (`ensemble`) and the pooled ridge head
//! over several classes' (`head`).

pub mod ensemble;
pub mod head;
pub mod lpboost;
pub mod stump;
pub mod union;
pub mod weak;
