//! The simplex's basis inverse B^-1, kept by column. In LPBoost's master most basic columns
//! are slacks of one entry; their rows give columns of B^-1 of one entry, which stay so until
//! the slack leaves the basis, so products with B^-1 cost m per dense column, not m^2. The
//! inverse is rebuilt from the few other columns alone (a Schur complement), so a
//! refactorisation costs about as many pivots as there are such columns.

/// A column of B^-1: a slack's row gives one entry (1 / its coefficient, at the slack's
/// basis position) until that slack leaves the basis.
#[derive(Debug, Clone)]
enum InverseColumn {
    Unit { pos: usize, val: f64 },
    Dense(Vec<f64>),
}

/// B^-1 of an m x m basis; column r belongs to row r of the LP, entry p to basis position p.
#[derive(Debug, Clone, Default)]
pub(crate) struct BasisInverse {
    cols: Vec<InverseColumn>,
}

impl BasisInverse {
    /// Columns of B^-1 with more than one entry.
    pub fn dense_columns(&self) -> usize {
        self.cols
            .iter()
            .filter(|c| matches!(c, InverseColumn::Dense(_)))
            .count()
    }

    /// B^-1 a for a given by its entries (row, value).
    pub fn times(&self, entries: impl Iterator<Item = (usize, f64)>) -> Vec<f64> {
        let mut out = vec![0.0; self.cols.len()];
        for (r, v) in entries {
            match &self.cols[r] {
                InverseColumn::Unit { pos, val } => out[*pos] += val * v,
                InverseColumn::Dense(c) => out.iter_mut().zip(c).for_each(|(a, b)| *a += b * v),
            }
        }
        out
    }

    /// Negates row p of B^-1: the inverse once B's column at position p is negated.
    pub fn negate_row(&mut self, p: usize) {
        for col in &mut self.cols {
            match col {
                InverseColumn::Unit { pos, val } if *pos == p => *val = -*val,
                InverseColumn::Unit { .. } => {}
                InverseColumn::Dense(c) => c[p] = -c[p],
            }
        }
    }

    /// Row p of B^-1.
    pub fn row(&self, p: usize) -> Vec<f64> {
        self.cols
            .iter()
            .map(|col| match col {
                InverseColumn::Unit { pos, val } if *pos == p => *val,
                InverseColumn::Unit { .. } => 0.0,
                InverseColumn::Dense(c) => c[p],
            })
            .collect()
    }

    /// pi = c_B' B^-1 for the basic columns' costs by position. Most basic columns cost
    /// nothing (slacks, hypotheses); pi sums over the others only, four dense columns at a
    /// time (independent sums, in the same order).
    pub fn left_times(&self, cost_at: &[f64]) -> Vec<f64> {
        let costs: Vec<(usize, f64)> = cost_at
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, c)| *c != 0.0)
            .collect();
        let mut pi = vec![0.0; self.cols.len()];
        let mut dense: Vec<(usize, &[f64])> = Vec::new();
        for (r, col) in self.cols.iter().enumerate() {
            match col {
                InverseColumn::Unit { pos, val } => {
                    let c = cost_at[*pos];
                    if c != 0.0 {
                        pi[r] = c * val;
                    }
                }
                InverseColumn::Dense(c) => dense.push((r, c)),
            }
        }
        for four in dense.chunks(4) {
            let mut acc = [0.0; 4];
            for &(p, c) in &costs {
                for (a, (_, col)) in acc.iter_mut().zip(four) {
                    *a += c * col[p];
                }
            }
            for (a, (r, _)) in acc.iter().zip(four) {
                pi[*r] = *a;
            }
        }
        pi
    }

    /// c' B^-1 for c given by its nonzero entries (position, value): the rows of B^-1 at
    /// those positions, weighed and summed, in one pass over the columns.
    pub fn left_times_sparse(&self, costs: &[(usize, f64)]) -> Vec<f64> {
        let mut at = vec![0.0; self.cols.len()];
        costs.iter().for_each(|&(p, c)| at[p] += c);
        self.cols
            .iter()
            .map(|col| match col {
                InverseColumn::Unit { pos, val } => at[*pos] * val,
                InverseColumn::Dense(c) => costs.iter().map(|&(p, w)| w * c[p]).sum(),
            })
            .collect()
    }

    /// The column whose B^-1 a is `alpha` enters at position p (product-form update): each
    /// column of B^-1 with an entry at p takes alpha's multiple; a one-entry column has one
    /// only if its slack is the column leaving, so the update costs m per dense column.
    /// Like [`Self::factor`], compiled for AVX-512 or AVX2 where the CPU has them:
    /// element-wise updates, the same operations (no fused multiply-add, no reassociation),
    /// the same bits.
    pub fn update(&mut self, p: usize, alpha: &[f64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked on the line above.
                return unsafe { self.update_avx512(p, alpha) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked on the line above.
                return unsafe { self.update_avx2(p, alpha) };
            }
        }
        self.update_portable(p, alpha)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn update_avx512(&mut self, p: usize, alpha: &[f64]) {
        self.update_portable(p, alpha)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn update_avx2(&mut self, p: usize, alpha: &[f64]) {
        self.update_portable(p, alpha)
    }

    #[inline(always)]
    fn update_portable(&mut self, p: usize, alpha: &[f64]) {
        let piv = alpha[p];
        let update = |c: &mut [f64]| {
            let t = c[p] / piv;
            c.iter_mut().zip(alpha).for_each(|(v, a)| *v -= a * t);
            c[p] = t;
        };
        for col in &mut self.cols {
            match col {
                InverseColumn::Unit { pos, val } if *pos == p => {
                    let mut c = vec![0.0; alpha.len()];
                    c[p] = *val;
                    update(&mut c);
                    *col = InverseColumn::Dense(c);
                }
                InverseColumn::Unit { .. } => {}
                InverseColumn::Dense(c) if c[p] != 0.0 => update(c),
                InverseColumn::Dense(_) => {}
            }
        }
    }

    /// B^-1 of the basis whose column at position p has the entries `basic[p]` (row,
    /// value); `None` when it is (numerically) singular. Columns of one entry cover their
    /// rows; the others (D) are solved on the rows left (R): D_R^-1 by Gauss-Jordan, then
    /// each covered row k's entries -(D_k D_R^-1) / v_k.
    pub fn factor(basic: &[&[(usize, f64)]]) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked on the line above.
                return unsafe { Self::factor_avx512(basic) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked on the line above.
                return unsafe { Self::factor_avx2(basic) };
            }
        }
        Self::factor_portable(basic)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn factor_avx512(basic: &[&[(usize, f64)]]) -> Option<Self> {
        Self::factor_portable(basic)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn factor_avx2(basic: &[&[(usize, f64)]]) -> Option<Self> {
        Self::factor_portable(basic)
    }

    // One loop nest on purpose: the factorisation kernel, compiled twice (AVX2 and
    // portable); split, its inner loops would not vectorise as one.
    #[inline(always)]
    fn factor_portable(basic: &[&[(usize, f64)]]) -> Option<Self> {
        let m = basic.len();
        let mut cover = vec![usize::MAX; m]; // row -> basis position of its one-entry column
        let mut dense: Vec<usize> = Vec::new(); // basis positions of the other columns
        for (p, entries) in basic.iter().enumerate() {
            match entries {
                [(r, v)] if *v != 0.0 => {
                    if cover[*r] != usize::MAX {
                        return None;
                    }
                    cover[*r] = p;
                }
                _ => dense.push(p),
            }
        }
        let rest: Vec<usize> = (0..m).filter(|&r| cover[r] == usize::MAX).collect();
        let k = dense.len();
        if rest.len() != k {
            return None;
        }
        let mut at = vec![usize::MAX; m];
        rest.iter().enumerate().for_each(|(i, &r)| at[r] = i);
        // D_R (k x k) beside the identity, inverted by Gauss-Jordan with partial pivoting.
        let mut dr = vec![0.0; k * k];
        let mut dinv = vec![0.0; k * k];
        for (j, &p) in dense.iter().enumerate() {
            for &(r, v) in basic[p] {
                if at[r] != usize::MAX {
                    dr[at[r] * k + j] += v;
                }
            }
        }
        for i in 0..k {
            dinv[i * k + i] = 1.0;
        }
        for c in 0..k {
            let piv = (c..k)
                .max_by(|&a, &b| dr[a * k + c].abs().total_cmp(&dr[b * k + c].abs()))
                .expect("c < k");
            let scale = (0..k).map(|j| dr[piv * k + j].abs()).fold(0.0, f64::max);
            if dr[piv * k + c].abs() <= 1e-11 * scale.max(1.0) {
                return None;
            }
            for j in 0..k {
                dr.swap(c * k + j, piv * k + j);
                dinv.swap(c * k + j, piv * k + j);
            }
            let d = dr[c * k + c];
            for j in 0..k {
                dr[c * k + j] /= d;
                dinv[c * k + j] /= d;
            }
            // Row c's copies let the updates run over disjoint rows; dr's columns before
            // c are zero in row c (eliminated), so its update starts at c.
            let dr_c = dr[c * k + c..(c + 1) * k].to_vec();
            let dinv_c = dinv[c * k..(c + 1) * k].to_vec();
            for (i, (dr_i, dinv_i)) in dr
                .chunks_exact_mut(k)
                .zip(dinv.chunks_exact_mut(k))
                .enumerate()
            {
                let f = dr_i[c];
                if i != c && f != 0.0 {
                    dr_i[c..]
                        .iter_mut()
                        .zip(&dr_c)
                        .for_each(|(v, r)| *v -= f * r);
                    dinv_i
                        .iter_mut()
                        .zip(&dinv_c)
                        .for_each(|(v, r)| *v -= f * r);
                }
            }
        }
        // Rows of D_R^-1 belong to the dense columns in order; column i to row rest[i],
        // whose column of B^-1 is dense. A covered row's column is its slack's alone.
        let mut rest_cols: Vec<Vec<f64>> = (0..k)
            .map(|i| {
                let mut c = vec![0.0; m];
                for (j, &p) in dense.iter().enumerate() {
                    c[p] = dinv[j * k + i];
                }
                c
            })
            .collect();
        // D's entries at the covered rows, by row (CSR, in column order), gathered in one
        // pass: scanning every dense column for each row made this m^2 k.
        let mut start = vec![0usize; m + 1];
        for &pd in &dense {
            for &(r, _) in basic[pd] {
                if cover[r] != usize::MAX {
                    start[r + 1] += 1;
                }
            }
        }
        for r in 0..m {
            start[r + 1] += start[r];
        }
        let mut fill = start.clone();
        let mut at_row = vec![(0usize, 0.0f64); start[m]];
        for (j, &pd) in dense.iter().enumerate() {
            for &(r, a) in basic[pd] {
                if cover[r] != usize::MAX {
                    at_row[fill[r]] = (j, a);
                    fill[r] += 1;
                }
            }
        }
        let mut s = vec![0.0; k]; // (D_k D_R^-1) for a covered row k
        for (r, &p) in cover.iter().enumerate() {
            if p == usize::MAX {
                continue;
            }
            let v = basic[p][0].1;
            let entries = &at_row[start[r]..start[r + 1]];
            if entries.is_empty() {
                continue;
            }
            s.iter_mut().for_each(|x| *x = 0.0);
            for &(j, a) in entries {
                s.iter_mut()
                    .zip(&dinv[j * k..(j + 1) * k])
                    .for_each(|(x, d)| *x += a * d);
            }
            for (&si, c) in s.iter().zip(&mut rest_cols) {
                c[p] = -si / v;
            }
        }
        let mut rest_cols = rest_cols.into_iter();
        let cols = cover
            .iter()
            .map(|&p| match p {
                usize::MAX => InverseColumn::Dense(rest_cols.next().expect("one per rest row")),
                p => InverseColumn::Unit {
                    pos: p,
                    val: 1.0 / basic[p][0].1,
                },
            })
            .collect();
        Some(Self { cols })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// B^-1 B = I for a basis of slacks and dense columns, after a factorisation and after
    /// updates that turn one-entry columns dense; the dispatched factorisation (AVX-512 or
    /// AVX2 where the CPU has them) and the portable one give the same bits.
    #[test]
    fn factor_and_update_keep_the_inverse() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let m = 24;
        let dense: Vec<Vec<(usize, f64)>> = (0..6)
            .map(|_| (0..m).map(|r| (r, rng.random_range(-1.0..1.0))).collect())
            .collect();
        let slack: Vec<Vec<(usize, f64)>> = (0..m).map(|r| vec![(r, -1.0)]).collect();
        // Dense columns on rows 0-5, slacks on the others.
        let mut basis: Vec<&[(usize, f64)]> = (0..m)
            .map(|r| if r < 6 { &dense[r][..] } else { &slack[r][..] })
            .collect();
        let identity = |inv: &BasisInverse, basis: &[&[(usize, f64)]]| {
            for (p, col) in basis.iter().enumerate() {
                let e = inv.times(col.iter().copied());
                for (i, v) in e.iter().enumerate() {
                    let want = if i == p { 1.0 } else { 0.0 };
                    assert!((v - want).abs() < 1e-9, "(B^-1 B)[{i}][{p}] = {v}");
                }
            }
        };
        let mut inv = BasisInverse::factor(&basis).expect("nonsingular");
        identity(&inv, &basis);
        let bits = |inv: &BasisInverse| -> Vec<u64> {
            (0..m).flat_map(|p| inv.row(p)).map(f64::to_bits).collect()
        };
        let portable = BasisInverse::factor_portable(&basis).expect("nonsingular");
        assert_eq!(bits(&inv), bits(&portable));
        // Slack columns of rows 6 and 7 leave for two more dense columns.
        let extra: Vec<Vec<(usize, f64)>> = (0..2)
            .map(|_| (0..m).map(|r| (r, rng.random_range(-1.0..1.0))).collect())
            .collect();
        let units = m - inv.dense_columns();
        for (p, col) in [6, 7].into_iter().zip(&extra) {
            let alpha = inv.times(col.iter().copied());
            inv.update(p, &alpha);
            basis[p] = col;
        }
        assert!(
            m - inv.dense_columns() < units,
            "no one-entry column turned dense"
        );
        identity(&inv, &basis);
        // Two slacks on one row: singular.
        basis[8] = &slack[9];
        assert!(BasisInverse::factor(&basis).is_none());
    }
}
