//! Weighted sums of a table's rows, the edges of the one-hot and mean hypotheses that every
//! space offers every boosting round (`weak::one_hot_edges`, `weak::best_mean`): compiled
//! for the widest registers the CPU has, with the scalar loop's bits.

/// out[z] += sign y_i d_i rows[i][z] over the active bags i in order (rows: bags x out.len(),
/// row-major): the edges of the one-hot and mean hypotheses. Bags outer, representatives
/// inner, so each bag's row is read in order; `sign` -1 subtracts, bit for bit (a - b is
/// a + (-b)). Compiled for AVX-512 or AVX2 when the CPU has them: the same operations per
/// representative (no fused multiply-add), wider registers.
pub(crate) fn add_weighted_rows(
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

/// [`add_weighted_rows_portable`] with the sums held in registers: 32 representatives at a
/// time in four 8-lane accumulators, the tail masked, every bag added in order. The scalar
/// loop kept `out` in memory, so each bag's update waited on the last one's store; here the
/// lanes' chains run side by side. One multiply, then one add per lane (no fused
/// multiply-add): the same bits.
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
    use std::arch::x86_64::*;
    let k = out.len();
    assert!(
        active.iter().all(|&i| (i + 1) * k <= rows.len()),
        "a row per active bag"
    );
    let mask = |lanes: usize| -> __mmask8 { ((1u16 << lanes.min(8)) - 1) as __mmask8 };
    let mut c = 0;
    while c < k {
        let w = (k - c).min(32);
        let m = [
            mask(w),
            mask(w.saturating_sub(8)),
            mask(w.saturating_sub(16)),
            mask(w.saturating_sub(24)),
        ];
        let o = out.as_mut_ptr().add(c);
        // SAFETY (loads and stores below): a lane is read or written only where its mask
        // bit is set, and set bits lie within out[c..c + w] and each active bag's row.
        let mut acc = [
            _mm512_maskz_loadu_pd(m[0], o),
            _mm512_maskz_loadu_pd(m[1], o.add(8)),
            _mm512_maskz_loadu_pd(m[2], o.add(16)),
            _mm512_maskz_loadu_pd(m[3], o.add(24)),
        ];
        for &i in active {
            let yd = _mm512_set1_pd(sign * (y[i] * d[i]));
            let r = rows.as_ptr().add(i * k + c);
            for (j, a) in acc.iter_mut().enumerate() {
                let v = _mm512_maskz_loadu_pd(m[j], r.add(8 * j));
                *a = _mm512_add_pd(*a, _mm512_mul_pd(yd, v));
            }
        }
        for (j, a) in acc.iter().enumerate() {
            _mm512_mask_storeu_pd(o.add(8 * j), m[j], *a);
        }
        c += 32;
    }
}

/// [`add_weighted_rows_avx512`] in 4-lane registers: 16 representatives at a time.
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
    use std::arch::x86_64::*;
    let k = out.len();
    assert!(
        active.iter().all(|&i| (i + 1) * k <= rows.len()),
        "a row per active bag"
    );
    // maskload / maskstore take a lane when its mask's sign bit is set.
    let mask = |lanes: usize| -> __m256i {
        let on = |l: usize| if l < lanes { -1i64 } else { 0 };
        _mm256_setr_epi64x(on(0), on(1), on(2), on(3))
    };
    let mut c = 0;
    while c < k {
        let w = (k - c).min(16);
        let m = [
            mask(w),
            mask(w.saturating_sub(4)),
            mask(w.saturating_sub(8)),
            mask(w.saturating_sub(12)),
        ];
        let o = out.as_mut_ptr().add(c);
        // SAFETY (loads and stores below): as in the AVX-512 version, masked lanes only.
        let mut acc = [
            _mm256_maskload_pd(o, m[0]),
            _mm256_maskload_pd(o.add(4), m[1]),
            _mm256_maskload_pd(o.add(8), m[2]),
            _mm256_maskload_pd(o.add(12), m[3]),
        ];
        for &i in active {
            let yd = _mm256_set1_pd(sign * (y[i] * d[i]));
            let r = rows.as_ptr().add(i * k + c);
            for (j, a) in acc.iter_mut().enumerate() {
                let v = _mm256_maskload_pd(r.add(4 * j), m[j]);
                *a = _mm256_add_pd(*a, _mm256_mul_pd(yd, v));
            }
        }
        for (j, a) in acc.iter().enumerate() {
            _mm256_maskstore_pd(o.add(4 * j), m[j], *a);
        }
        c += 16;
    }
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
        for k in [1usize, 3, 8, 13, 25, 33, 100] {
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
                let mut variants = vec![("portable", {
                    let mut v = vec![0.0; k];
                    add_weighted_rows_portable(&mut v, &rows, &active, &y, &d, sign);
                    v
                })];
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        let mut v = vec![0.0; k];
                        // SAFETY: the CPU has AVX-512F, checked on the line above.
                        unsafe { add_weighted_rows_avx512(&mut v, &rows, &active, &y, &d, sign) };
                        variants.push(("avx512", v));
                    }
                    if std::arch::is_x86_feature_detected!("avx2") {
                        let mut v = vec![0.0; k];
                        // SAFETY: the CPU has AVX2, checked on the line above.
                        unsafe { add_weighted_rows_avx2(&mut v, &rows, &active, &y, &d, sign) };
                        variants.push(("avx2", v));
                    }
                }
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
                for (name, v) in &variants {
                    assert_eq!(bits(v), bits(&want), "{name}: k {k}, sign {sign}");
                }
            }
        }
    }
}
