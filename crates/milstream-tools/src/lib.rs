//! What the command line and the Python package share over the learning core: the model
//! card (`card`), the explanation figure (`figure`: what a finding means is the core's, the
//! drawing is here) and the fitting options with their progress (`fit_options`). Nothing
//! here reads Kafka or writes outputs: the daemon does not depend on this crate.
pub use milstream_core::{data, drift, mil};

pub mod card;
pub mod figure;
pub mod fit_options;
