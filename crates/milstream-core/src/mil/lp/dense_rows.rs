//! The simplex's dense columns (LPBoost's hypotheses: an entry per bag) kept a second time,
//! row by row, for pricing. A pivot prices every nonbasic column, c_j - pi'a_j; by column
//! each sum is a chain of adds over every bag. By row, the sums of all dense columns advance
//! side by side (one multiply-add per column, in registers' width), and a row whose dual is
//! zero (a bag of no weight: most bags in LPBoost's master) is skipped, since adding
//! pi_r a_rj = 0 leaves a sum as it is. Each column's sum still runs over its rows in order
//! from -0.0, as `Iterator::sum` over its entries does: the same bits.

/// Dense columns by row: row r holds every dense column's entry in row r side by side.
#[derive(Debug, Clone)]
pub(crate) struct DenseRows {
    rows: usize,
    /// The LP column of each dense column, in block order.
    cols: Vec<usize>,
    /// Per LP column its place in block order (`usize::MAX`: not dense; columns past the
    /// end are not dense either).
    slot: Vec<usize>,
    /// rows x capacity, row-major; a row's first `cols.len()` slots are in use.
    data: Vec<f64>,
    capacity: usize,
}

impl DenseRows {
    pub fn new(rows: usize) -> Self {
        Self {
            rows,
            cols: Vec::new(),
            slot: Vec::new(),
            data: Vec::new(),
            capacity: 0,
        }
    }

    /// Whether a column of `entries` entries is kept here: one with an entry in most rows.
    pub fn wants(&self, entries: usize) -> bool {
        entries > 16 && entries * 4 > self.rows
    }

    /// Adds LP column `j`, given by its entries (row, value).
    pub fn push(&mut self, j: usize, entries: &[(usize, f64)]) {
        let w = self.cols.len();
        if w == self.capacity {
            let capacity = (2 * self.capacity).max(8);
            let mut data = vec![0.0; self.rows * capacity];
            for r in 0..self.rows {
                data[r * capacity..r * capacity + w]
                    .copy_from_slice(&self.data[r * self.capacity..r * self.capacity + w]);
            }
            (self.data, self.capacity) = (data, capacity);
        }
        for r in 0..self.rows {
            self.data[r * self.capacity + w] = 0.0;
        }
        for &(r, v) in entries {
            self.data[r * self.capacity + w] = v;
        }
        self.cols.push(j);
        if self.slot.len() <= j {
            self.slot.resize(j + 1, usize::MAX);
        }
        self.slot[j] = w;
    }

    /// Keeps the columns whose `new_index` is not `usize::MAX`, renumbered to it.
    pub fn retain(&mut self, new_index: &[usize]) {
        let keep: Vec<usize> = (0..self.cols.len())
            .filter(|&k| new_index[self.cols[k]] != usize::MAX)
            .collect();
        for r in 0..self.rows {
            let row = &mut self.data[r * self.capacity..(r + 1) * self.capacity];
            for (to, &from) in keep.iter().enumerate() {
                row[to] = row[from];
            }
        }
        self.cols = keep.iter().map(|&k| new_index[self.cols[k]]).collect();
        let n = self.cols.iter().map(|&j| j + 1).max().unwrap_or(0);
        self.slot = vec![usize::MAX; n];
        for (k, &j) in self.cols.iter().enumerate() {
            self.slot[j] = k;
        }
    }

    /// LP column `j`'s place in block order (in [`Self::products`]), if it is dense.
    pub fn slot(&self, j: usize) -> Option<usize> {
        self.slot.get(j).copied().filter(|&k| k != usize::MAX)
    }

    /// The LP column of each dense column, in the order of [`Self::products`].
    #[cfg(test)]
    fn columns(&self) -> &[usize] {
        &self.cols
    }

    /// pi'a_j of every dense column, in block order.
    pub fn products(&self, pi: &[f64]) -> Vec<f64> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked on the line above.
                return unsafe { self.products_avx512(pi) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked on the line above.
                return unsafe { self.products_avx2(pi) };
            }
        }
        self.products_portable(pi)
    }

    /// [`Self::products_portable`] compiled for AVX-512: the same operations per column
    /// (a multiply, then an add: no fused multiply-add), wider registers.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn products_avx512(&self, pi: &[f64]) -> Vec<f64> {
        self.products_portable(pi)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn products_avx2(&self, pi: &[f64]) -> Vec<f64> {
        self.products_portable(pi)
    }

    #[inline(always)]
    fn products_portable(&self, pi: &[f64]) -> Vec<f64> {
        let w = self.cols.len();
        let mut sums = vec![-0.0f64; w];
        for (r, &p) in pi.iter().enumerate().take(self.rows) {
            if p == 0.0 {
                continue;
            }
            let row = &self.data[r * self.capacity..r * self.capacity + w];
            for (s, &v) in sums.iter_mut().zip(row) {
                *s += p * v;
            }
        }
        sums
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// By row, with zero duals skipped, each column's product is its entries' sum bit for
    /// bit, through pushes (past the first capacity) and deletions.
    #[test]
    fn products_by_row_are_the_column_sums_bit_for_bit() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let rows = 41;
        let mut block = DenseRows::new(rows);
        let mut columns: Vec<(usize, Vec<(usize, f64)>)> = Vec::new();
        let column = |rng: &mut rand_chacha::ChaCha8Rng| -> Vec<(usize, f64)> {
            let mut e = Vec::new();
            for r in 0..rows {
                let v = rng.random_range(-1.0..1.0);
                if rng.random_range(0.0..1.0) < 0.8 {
                    e.push((r, v));
                }
            }
            e
        };
        for j in 0..20 {
            let e = column(&mut rng);
            block.push(100 + j, &e);
            columns.push((100 + j, e));
        }
        // Delete every third column; LP columns renumber down by 50.
        let mut new_index = vec![usize::MAX; 200];
        columns.retain(|(j, _)| j % 3 != 0);
        for (j, _) in &mut columns {
            new_index[*j] = *j - 50;
            *j -= 50;
        }
        block.retain(&new_index);
        for j in 0..5 {
            let e = column(&mut rng);
            block.push(150 + j, &e);
            columns.push((150 + j, e));
        }
        let pi: Vec<f64> = (0..rows)
            .map(|r| {
                if r % 4 == 0 {
                    rng.random_range(-2.0..2.0)
                } else {
                    0.0
                }
            })
            .collect();
        let got = block.products(&pi);
        let portable = block.products_portable(&pi);
        assert_eq!(block.columns().len(), columns.len());
        for (k, (j, e)) in columns.iter().enumerate() {
            assert_eq!(block.columns()[k], *j);
            assert_eq!(block.slot(*j), Some(k));
            let want: f64 = e.iter().map(|&(r, v)| pi[r] * v).sum();
            assert_eq!(got[k].to_bits(), want.to_bits(), "column {j}");
            assert_eq!(portable[k].to_bits(), want.to_bits(), "column {j}");
        }
    }
}
