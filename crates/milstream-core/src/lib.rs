//! The milstream learning core: pure and synchronous. `mil` holds the models (LPBoost over
//! kernelized shapelets and the other kinds), their spaces, the LP, model selection and
//! online scoring; `data` reads the offline dataset formats; `drift` holds the detectors
//! the daemon runs over its models' errors and inputs. Nothing here knows of Kafka, files
//! of the daemon, or threads other than rayon's.
pub mod data;
pub mod drift;
pub mod mil;
