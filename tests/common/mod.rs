//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use milstream::data::read_dataset;
use milstream::mil::Dataset;

/// A vendored dataset under tests/data/.
pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

pub fn load(name: &str) -> Dataset {
    read_dataset(&data_path(name), None).unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

/// Test accuracy of `model` on `test`.
pub fn test_accuracy(model: &milstream::mil::Model, test: &Dataset) -> f64 {
    let hits = test
        .samples
        .iter()
        .zip(&test.labels)
        .filter(|(s, l)| model.predict(s).expect("test samples fit the model").label == **l)
        .count();
    hits as f64 / test.len() as f64
}

/// A scratch directory unique to this test process and `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("milstream-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    dir
}

pub mod s3;
pub mod stream;
pub mod tansu;
pub mod tools;
