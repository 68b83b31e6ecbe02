//! The tests' fixed pseudo-random draws: a 64-bit linear congruential generator (Knuth's
//! MMIX constants), so a test's data is the same on every machine and run.

/// Uniform draws in [0, 1) from `seed`, 53 bits each.
pub fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    }
}
