//! Stratified k-fold splits, shared by cross-validation (`select.rs`) and the inner
//! cross-validation of a fit's kernel width (`shapelet.rs`).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::mil::error::{MilError, Result};

/// Test-set indices of `k` stratified folds: each class is shuffled (seeded) and dealt
/// round-robin, so every fold holds each class in proportion.
pub fn stratified_folds(labels: &[String], k: usize, seed: u64) -> Result<Vec<Vec<usize>>> {
    if k < 2 || k > labels.len() {
        return Err(MilError::InvalidParameter(format!(
            "folds must be in 2..={} (the number of examples), got {k}",
            labels.len()
        )));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut by_class: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        match by_class.iter_mut().find(|(c, _)| c == l) {
            Some((_, v)) => v.push(i),
            None => by_class.push((l.clone(), vec![i])),
        }
    }
    by_class.sort_by(|a, b| a.0.cmp(&b.0));
    let mut folds = vec![Vec::new(); k];
    let mut next = 0;
    for (_, mut idx) in by_class {
        idx.shuffle(&mut rng);
        for i in idx {
            folds[next % k].push(i);
            next += 1;
        }
    }
    for f in &mut folds {
        f.sort_unstable();
    }
    Ok(folds)
}
