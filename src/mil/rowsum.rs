//! Weighted sums of a table's rows, the edges of the one-hot and mean hypotheses that every
//! space offers every boosting round (`weak::one_hot_edges`, `weak::best_mean`): compiled
//! for the widest registers the CPU has, with the scalar loop's bits.

/// out[z] += sign y_i d_i rows[i][z] over the active bags i in order (rows: bags x out.len(),
/// row-major): the edges of the one-hot and mean hypotheses. Bags outer, representatives
/// inner, so each bag's row is read in order; `sign` -1 subtracts, bit for bit (a - b is
/// a + (-b)). Compiled for AVX-512 or AVX2 when the CPU has them: the same operations per
/// representative (no fused multiply-add), wider registers.
pub(super) fn add_weighted_rows(
    out: &mut [f64],
    rows: &[f64],
    active: &[usize],
    y: &[f64],
    d: &[f64],
    sign: f64,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked on the line above.
            return unsafe { add_weighted_rows_avx512(out, rows, active, y, d, sign) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked on the line above.
            return unsafe { add_weighted_rows_avx2(out, rows, active, y, d, sign) };
        }
    }
    add_weighted_rows_portable(out, rows, active, y, d, sign)
}

#[inline(always)]
fn add_weighted_rows_portable(
    out: &mut [f64],
    rows: &[f64],
    active: &[usize],
    y: &[f64],
    d: &[f64],
    sign: f64,
) {
    let k = out.len();
    for &i in active {
        let yd = sign * (y[i] * d[i]);
        for (o, &v) in out.iter_mut().zip(&rows[i * k..(i + 1) * k]) {
            *o += yd * v;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_weighted_rows_avx512(
    out: &mut [f64],
    rows: &[f64],
    active: &[usize],
    y: &[f64],
    d: &[f64],
    sign: f64,
) {
    add_weighted_rows_portable(out, rows, active, y, d, sign)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_weighted_rows_avx2(
    out: &mut [f64],
    rows: &[f64],
    active: &[usize],
    y: &[f64],
    d: &[f64],
    sign: f64,
) {
    add_weighted_rows_portable(out, rows, active, y, d, sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dispatched sums (AVX-512 or AVX2 where the CPU has them) are the scalar loop's
    /// bit for bit, and sign -1 is the subtraction the one-hot edges made before.
    #[test]
    fn weighted_row_sums_are_the_scalar_loop_bit_for_bit() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(46);
        for k in [1usize, 3, 8, 13, 25, 100] {
            let m = 40;
            let rows: Vec<f64> = (0..m * k).map(|_| rng.random_range(-1.0..1.0)).collect();
            let y: Vec<f64> = (0..m)
                .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
                .collect();
            let d: Vec<f64> = (0..m).map(|_| rng.random_range(0.0..0.1)).collect();
            let active: Vec<usize> = (0..m).filter(|i| i % 4 != 1).collect();
            for sign in [1.0, -1.0] {
                let mut got = vec![0.0; k];
                add_weighted_rows(&mut got, &rows, &active, &y, &d, sign);
                let mut want = vec![0.0f64; k];
                for &i in &active {
                    let yd = y[i] * d[i];
                    for z in 0..k {
                        if sign > 0.0 {
                            want[z] += yd * rows[i * k + z];
                        } else {
                            want[z] -= yd * rows[i * k + z];
                        }
                    }
                }
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "k {k}, sign {sign}");
            }
        }
    }
}
