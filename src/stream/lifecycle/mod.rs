//! The models' life: the training store of joined examples (`training`), retraining and
//! promotion (`trainer`), the versions on a registry (`registry`) that scorers follow
//! (`registry_poll`), and the compacted models topic (`models_topic`).

pub mod models_topic;
pub mod registry;
pub mod registry_poll;
pub mod trainer;
pub mod training;
