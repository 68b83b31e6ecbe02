//! The kernel table of one shapelet space: per training bag the max, min, mean and argmax
//! over its instances of each representative's K(z, .), and the kernel rows the DC step
//! reads. Built once per fit; every hypothesis's training outputs are read from it.

use rayon::prelude::*;

use crate::mil::bag::InstanceSet;
use crate::mil::error::{MilError, Result};
use crate::mil::space::kernel::{gaussian_from_sq_dists, sq_dists_row, Kernel, RepBlocks};

/// Everything the weak learner needs of one shapelet space, computed once per fit: per bag
/// the max, min and mean over its instances of each K(z, .), which make the one-hot start
/// and the mean hypotheses table lookups, and the kernel row k_x = (K(z, x))_z of the
/// training instances the DC subproblems use (cached across rounds and DC iterations).
///
/// With `row_stride` s > 1 (long series, many windows) the rows are kept for every s-th
/// instance of a bag only, which bounds memory; the bag statistics and the outputs h(B_i) of
/// a hypothesis stay exact over every instance, so training sees what prediction sees;
/// `usize::MAX` keeps none (for fits that run no DC step).
pub struct KernelTable<'a> {
    pub k: usize,
    /// Row-major (kept instances) x k.
    rows: Vec<f64>,
    /// Per bag, its range of kept instances in `rows`.
    offsets: Vec<usize>,
    pub(crate) bag_max: Vec<f64>,
    pub(crate) bag_min: Vec<f64>,
    /// Per bag the mean over its instances of each K(z, .): the mean hypotheses' outputs.
    pub(crate) bag_mean: Vec<f64>,
    /// Per bag the index of its first maximiser of each K(z, .) (the position thresholds'
    /// feature; 4 bytes, as 5,000 windows x 32 spaces x k = 100 of them are 64 MB).
    bag_argmax: Vec<u32>,
    /// Instances per bag.
    bag_len: Vec<usize>,
    /// K(z, z), to put one-hot starts on the RKHS unit sphere for OP1.
    pub(crate) diag: Vec<f64>,
    /// Lower Cholesky factor L of the representatives' Gram matrix (OP1 only): alpha'K alpha = |L'alpha|^2.
    pub(crate) chol: Option<Vec<f64>>,
    /// Every instance, the representatives and the kernel, for exact outputs when rows
    /// are kept for some instances only (None when every row is kept).
    exact: Option<(&'a InstanceSet, &'a [f64], Kernel)>,
    /// Built by [`KernelTable::statistics`]: no rows for a DC step.
    statistics_only: bool,
}

/// One bag's part of a table: its statistics over all instances and its kept rows.
struct BagPart {
    max: Vec<f64>,
    min: Vec<f64>,
    mean: Vec<f64>,
    argmax: Vec<u32>,
    rows: Vec<f64>,
}

impl BagPart {
    /// Instance `t`'s kernel row `r` into the statistics.
    #[inline]
    fn add(&mut self, t: u32, r: &[f64]) {
        // Compare-and-select rather than f64::max/min (their NaN rule keeps the loop
        // scalar); kernel values are never NaN.
        for ((((mx, mn), sum), a), &v) in self
            .max
            .iter_mut()
            .zip(&mut self.min)
            .zip(&mut self.mean)
            .zip(&mut self.argmax)
            .zip(r)
        {
            // Strict >: the first maximiser, as prediction's argmax keeps it.
            *a = if v > *mx { t } else { *a };
            *mx = if v > *mx { v } else { *mx };
            *mn = if v < *mn { v } else { *mn };
            *sum += v;
        }
    }
}

impl<'a> KernelTable<'a> {
    /// The table of `reps` over `instances`, its rows kept every `row_stride`-th instance of
    /// a bag, with the Cholesky factor of the representatives' Gram matrix when
    /// `gram_factor` (OP1's DC step).
    pub fn new(
        instances: &'a InstanceSet,
        reps: &'a [f64],
        kernel: &Kernel,
        gram_factor: bool,
        row_stride: usize,
    ) -> Result<Self> {
        let table: KernelTable<'a> = KernelTable::build(
            instances,
            reps,
            std::slice::from_ref(kernel),
            gram_factor,
            row_stride,
        )?
        .remove(0);
        let exact = (row_stride > 1).then_some((instances, reps, *kernel));
        Ok(KernelTable { exact, ..table })
    }

    /// A table of the bag statistics alone, which borrows nothing: enough for every
    /// hypothesis but the DC step's (non-one-hot alpha), so a fit with no DC step can drop
    /// a space's instances once its table stands.
    pub fn statistics(
        instances: &InstanceSet,
        reps: &[f64],
        kernel: &Kernel,
        gram_factor: bool,
    ) -> Result<KernelTable<'static>> {
        let mut tables =
            KernelTable::statistics_at(instances, reps, std::slice::from_ref(kernel), gram_factor)?;
        Ok(tables.remove(0))
    }

    /// [`statistics`](Self::statistics) at each of `kernels` over the same representatives,
    /// in one pass over the instances: several Gaussian widths share each instance's
    /// distances (most of a table's cost at many features: MUSK2 at every instance a
    /// representative and three widths spent 79 % of its fit in kernel rows).
    pub fn statistics_at(
        instances: &InstanceSet,
        reps: &[f64],
        kernels: &[Kernel],
        gram_factor: bool,
    ) -> Result<Vec<KernelTable<'static>>> {
        let tables = KernelTable::build(instances, reps, kernels, gram_factor, usize::MAX)?;
        Ok(tables
            .into_iter()
            .map(|table| KernelTable {
                statistics_only: true,
                ..table
            })
            .collect())
    }

    /// One table per kernel of `kernels`.
    fn build(
        instances: &InstanceSet,
        reps: &[f64],
        kernels: &[Kernel],
        gram_factor: bool,
        row_stride: usize,
    ) -> Result<Vec<KernelTable<'static>>> {
        let dim = instances.dim;
        let k = reps.len() / dim;
        let m = instances.n_bags();
        let stride = row_stride.max(1);
        let blocks = RepBlocks::new(reps, dim);
        // Gaussian widths read one distance row each instance.
        let sigmas: Option<Vec<f64>> = (kernels.len() > 1)
            .then(|| kernels.iter().map(Kernel::gaussian_sigma).collect())
            .flatten();
        let parts: Vec<Vec<BagPart>> = (0..m)
            .into_par_iter()
            .map(|i| {
                let range = instances.bag_range(i);
                let n = range.len();
                // A statistics-only table keeps no rows (8 bytes a representative a bag).
                let kept = if stride == usize::MAX {
                    0
                } else {
                    n.div_ceil(stride)
                };
                let mut parts: Vec<BagPart> = kernels
                    .iter()
                    .map(|_| BagPart {
                        max: vec![f64::NEG_INFINITY; k],
                        min: vec![f64::INFINITY; k],
                        mean: vec![0.0; k],
                        argmax: vec![0; k],
                        rows: vec![0.0; kept * k],
                    })
                    .collect();
                let mut scratch = vec![0.0; k];
                let mut dists = vec![0.0; if sigmas.is_some() { k } else { 0 }];
                for (t, j) in range.enumerate() {
                    let x = instances.instance(j);
                    if sigmas.is_some() {
                        sq_dists_row(x, &blocks, &mut dists);
                    }
                    for (c, (part, kernel)) in parts.iter_mut().zip(kernels).enumerate() {
                        match &sigmas {
                            Some(s) => gaussian_from_sq_dists(s[c], &dists, &mut scratch),
                            None => kernel.row_blocked(x, &blocks, &mut scratch),
                        }
                        part.add(t as u32, &scratch);
                        if t / stride < kept && t % stride == 0 {
                            let o = (t / stride) * k;
                            part.rows[o..o + k].copy_from_slice(&scratch);
                        }
                    }
                }
                let nf = n.max(1) as f64;
                for part in &mut parts {
                    part.mean.iter_mut().for_each(|v| *v /= nf);
                }
                parts
            })
            .collect();
        let bag_len: Vec<usize> = (0..m).map(|i| instances.bag_range(i).len()).collect();
        let mut per_kernel: Vec<Vec<BagPart>> = kernels.iter().map(|_| Vec::new()).collect();
        for bag in parts {
            for (c, part) in bag.into_iter().enumerate() {
                per_kernel[c].push(part);
            }
        }
        kernels
            .iter()
            .zip(per_kernel)
            .map(|(kernel, parts)| {
                KernelTable::assemble(parts, bag_len.clone(), reps, dim, kernel, gram_factor)
            })
            .collect()
    }

    /// One kernel's table from its bags' parts.
    fn assemble(
        parts: Vec<BagPart>,
        bag_len: Vec<usize>,
        reps: &[f64],
        dim: usize,
        kernel: &Kernel,
        gram_factor: bool,
    ) -> Result<KernelTable<'static>> {
        let k = reps.len() / dim;
        let m = parts.len();
        let mut offsets = Vec::with_capacity(m + 1);
        offsets.push(0);
        let total: usize = parts.iter().map(|p| p.rows.len() / k.max(1)).sum();
        let mut rows = Vec::with_capacity(total * k);
        let (mut bag_max, mut bag_min, mut bag_mean, mut bag_argmax) = (
            Vec::with_capacity(m * k),
            Vec::with_capacity(m * k),
            Vec::with_capacity(m * k),
            Vec::with_capacity(m * k),
        );
        for p in parts {
            rows.extend_from_slice(&p.rows);
            offsets.push(rows.len() / k.max(1));
            bag_max.extend_from_slice(&p.max);
            bag_min.extend_from_slice(&p.min);
            bag_mean.extend_from_slice(&p.mean);
            bag_argmax.extend_from_slice(&p.argmax);
        }
        let zs: Vec<&[f64]> = reps.chunks_exact(dim).collect();
        let diag: Vec<f64> = zs.iter().map(|z| kernel.eval(z, z)).collect();
        // OP1's DC step (alpha'K alpha <= 1) reads the Gram matrix's Cholesky factor.
        let chol = if gram_factor {
            let mut gram = vec![0.0; k * k];
            for a in 0..k {
                for b in 0..=a {
                    let v = kernel.eval(zs[a], zs[b]);
                    gram[a * k + b] = v;
                    gram[b * k + a] = v;
                }
            }
            Some(cholesky_with_jitter(&gram, k)?)
        } else {
            None
        };
        Ok(KernelTable {
            k,
            rows,
            offsets,
            bag_max,
            bag_min,
            bag_mean,
            bag_argmax,
            bag_len,
            diag,
            chol,
            exact: None,
            statistics_only: false,
        })
    }

    /// The table of the bags `bags` only (their statistics and kept rows; the same
    /// representatives and kernel): an inner fold's table from the outer fit's. Not for a
    /// table that reads instances again for exact outputs.
    pub fn bag_subset(&self, bags: &[usize]) -> KernelTable<'static> {
        assert!(
            self.exact.is_none(),
            "a table with exact outputs is not subset"
        );
        let k = self.k;
        let pick = |v: &[f64]| -> Vec<f64> {
            bags.iter()
                .flat_map(|&b| v[b * k..(b + 1) * k].iter().copied())
                .collect()
        };
        let mut offsets = Vec::with_capacity(bags.len() + 1);
        offsets.push(0);
        let mut rows = Vec::new();
        for &b in bags {
            rows.extend_from_slice(&self.rows[self.offsets[b] * k..self.offsets[b + 1] * k]);
            offsets.push(rows.len() / k.max(1));
        }
        KernelTable {
            k,
            rows,
            offsets,
            bag_max: pick(&self.bag_max),
            bag_min: pick(&self.bag_min),
            bag_mean: pick(&self.bag_mean),
            bag_argmax: bags
                .iter()
                .flat_map(|&b| self.bag_argmax[b * k..(b + 1) * k].iter().copied())
                .collect(),
            bag_len: bags.iter().map(|&b| self.bag_len[b]).collect(),
            diag: self.diag.clone(),
            chol: self.chol.clone(),
            exact: None,
            statistics_only: self.statistics_only,
        }
    }

    /// Instances over all bags.
    pub fn n_instances(&self) -> usize {
        self.bag_len.iter().sum()
    }

    pub fn n_bags(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Per bag (row-major bags x k): max, min and mean over its instances of each K(z, .).
    pub fn bag_stats(&self) -> (&[f64], &[f64], &[f64]) {
        (&self.bag_max, &self.bag_min, &self.bag_mean)
    }

    /// Per bag (row-major bags x k): where the first maximiser of each K(z, .) lies.
    pub fn bag_positions(&self) -> Vec<f64> {
        self.bag_argmax
            .chunks_exact(self.k.max(1))
            .zip(&self.bag_len)
            .flat_map(|(args, &n)| args.iter().map(move |&a| position(a as usize, n)))
            .collect()
    }

    /// The outputs sign * mean_{x in B_i} K(z, x) of a mean hypothesis on every training bag.
    pub fn mean_outputs(&self, z: usize, sign: f64) -> Vec<f64> {
        (0..self.n_bags())
            .map(|i| sign * self.bag_mean[i * self.k + z])
            .collect()
    }

    /// Kernel rows kept (memory: 8 k bytes each).
    pub fn n_rows(&self) -> usize {
        self.rows.len() / self.k.max(1)
    }

    pub(crate) fn row(&self, j: usize) -> &[f64] {
        &self.rows[j * self.k..(j + 1) * self.k]
    }

    /// max and argmax (kept instance index) over bag i of k_x' alpha, for sparse alpha.
    #[inline]
    pub(crate) fn bag_score(&self, i: usize, alpha: &[(usize, f64)]) -> (f64, usize) {
        let mut best = f64::NEG_INFINITY;
        let mut arg = self.offsets[i];
        for j in self.offsets[i]..self.offsets[i + 1] {
            let r = self.row(j);
            let s: f64 = alpha.iter().map(|&(z, a)| a * r[z]).sum();
            if s > best {
                best = s;
                arg = j;
            }
        }
        (best, arg)
    }

    /// The bag holding kept instance `x`.
    pub(crate) fn bag_of(&self, x: usize) -> usize {
        self.offsets.partition_point(|&o| o <= x) - 1
    }

    /// h_alpha(B_i) for every training bag, over every instance.
    pub fn outputs(&self, alpha: &[(usize, f64)]) -> Vec<f64> {
        // One-hot alpha: max_x a K(z, x) is a times the bag's max (a > 0) or min (a < 0) of
        // K(z, .), both exact over every instance; rounding is monotone, so the bits are
        // those of the sums below.
        if let [(z, a)] = *alpha {
            let stat = if a >= 0.0 {
                &self.bag_max
            } else {
                &self.bag_min
            };
            return (0..self.n_bags())
                .map(|i| 0.0 + a * stat[i * self.k + z])
                .collect();
        }
        assert!(
            !self.statistics_only,
            "a statistics-only table cannot score a DC hypothesis (alpha of {} entries)",
            alpha.len()
        );
        let Some((set, reps, kernel)) = &self.exact else {
            return (0..self.n_bags())
                .map(|i| self.bag_score(i, alpha).0)
                .collect();
        };
        let dim = set.dim;
        (0..self.n_bags())
            .into_par_iter()
            .map(|i| {
                // K(x, z) for every instance x of the bag in one vectorised kernel row (the
                // Gaussian is symmetric bit for bit: (a - b)^2 == (b - a)^2), summed over
                // alpha in order.
                let range = set.bag_range(i);
                let bag = &set.data[range.start * dim..range.end * dim];
                let mut sums = vec![0.0; range.len()];
                let mut k_col = vec![0.0; range.len()];
                for &(z, a) in alpha {
                    kernel.row(&reps[z * dim..(z + 1) * dim], bag, &mut k_col);
                    sums.iter_mut().zip(&k_col).for_each(|(s, &v)| *s += a * v);
                }
                sums.into_iter().fold(f64::NEG_INFINITY, f64::max)
            })
            .collect()
    }
}

/// The relative position of instance `index` of a bag of `count` instances: index / count,
/// in [0, 1). Training, prediction and the incremental scorer all compute it here.
#[inline]
pub fn position(index: usize, count: usize) -> f64 {
    index as f64 / count.max(1) as f64
}

/// Cholesky factor of a PSD Gram matrix, adding a small ridge if it is singular (repeated or
/// nearly repeated representatives).
fn cholesky_with_jitter(a: &[f64], n: usize) -> Result<Vec<f64>> {
    let mean_diag = (0..n).map(|i| a[i * n + i]).sum::<f64>() / n.max(1) as f64;
    let mut jitter = 0.0;
    for _ in 0..8 {
        if let Some(l) = cholesky(a, n, jitter) {
            return Ok(l);
        }
        jitter = if jitter == 0.0 {
            1e-10 * mean_diag.max(1e-300)
        } else {
            jitter * 100.0
        };
    }
    Err(MilError::Training(
        "the representatives' Gram matrix is not positive semi-definite".into(),
    ))
}

/// The lower factor L of `a + jitter I` (nalgebra's Cholesky), row-major, or None when the
/// matrix is not positive definite.
fn cholesky(a: &[f64], n: usize, jitter: f64) -> Option<Vec<f64>> {
    let m = nalgebra::DMatrix::from_fn(n, n, |i, j| {
        a[i * n + j] + if i == j { jitter } else { 0.0 }
    });
    let l = nalgebra::Cholesky::new(m)?.unpack();
    if l.iter().any(|v| !v.is_finite()) {
        return None;
    }
    // Row-major L is column-major L', whose buffer is nalgebra's storage of L'.
    Some(l.transpose().as_slice().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subset_of_bags_is_the_table_of_their_instances() {
        // Five bags of 1 to 4 two-value instances, three representatives.
        let lens = [3, 1, 4, 2, 3];
        let mut offsets = vec![0];
        for l in lens {
            offsets.push(offsets.last().unwrap() + l);
        }
        let n = *offsets.last().unwrap();
        let data: Vec<f64> = (0..2 * n).map(|i| ((i * 7) % 11) as f64 / 5.0).collect();
        let set = InstanceSet {
            dim: 2,
            data,
            offsets,
        };
        let reps = [0.1, 0.2, 1.5, 0.3, 2.0, 1.9];
        let kernel = Kernel::Gaussian { sigma: 0.7 };
        let bags = [0, 2, 4];
        let whole = KernelTable::statistics(&set, &reps, &kernel, false).unwrap();
        let subset = whole.bag_subset(&bags);
        let direct = KernelTable::statistics(&set.subset(&bags), &reps, &kernel, false).unwrap();
        assert_eq!(subset.bag_stats(), direct.bag_stats());
        assert_eq!(subset.bag_positions(), direct.bag_positions());
        assert_eq!((subset.n_bags(), subset.n_instances()), (3, 10));
        assert_eq!(subset.outputs(&[(1, -0.5)]), direct.outputs(&[(1, -0.5)]));
        assert_eq!(subset.mean_outputs(2, 1.0), direct.mean_outputs(2, 1.0));
    }

    #[test]
    fn several_widths_in_one_pass_are_each_widths_own_table() {
        // 13 features: one block of eight lanes and a serial tail; 11 representatives: a
        // zero-padded last block.
        let dim = 13;
        let offsets = vec![0, 2, 7, 8, 12];
        let data: Vec<f64> = (0..dim * 12)
            .map(|i| ((i * 37) % 23) as f64 / 7.0 - 1.5)
            .collect();
        let reps: Vec<f64> = data[dim..dim * 12].to_vec();
        let set = InstanceSet { dim, data, offsets };
        let kernels = [0.02, 0.3, 1.1].map(|sigma| Kernel::Gaussian { sigma });
        let together = KernelTable::statistics_at(&set, &reps, &kernels, false).unwrap();
        for (kernel, table) in kernels.iter().zip(&together) {
            let alone = KernelTable::statistics(&set, &reps, kernel, false).unwrap();
            assert_eq!(table.bag_stats(), alone.bag_stats());
            assert_eq!(table.bag_positions(), alone.bag_positions());
            assert_eq!(table.n_rows(), 0);
        }
    }

    #[test]
    fn the_cholesky_factor_is_lower_and_reproduces_the_gram_matrix() {
        let a = [4.0, 2.0, 0.4, 2.0, 5.0, 1.0, 0.4, 1.0, 3.0];
        let l = cholesky_with_jitter(&a, 3).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let llt: f64 = (0..3).map(|p| l[i * 3 + p] * l[j * 3 + p]).sum();
                assert!((llt - a[i * 3 + j]).abs() < 1e-12, "({i},{j}): {llt}");
                if j > i {
                    assert_eq!(l[i * 3 + j], 0.0);
                }
            }
        }
        // Two equal representatives: singular, factored with a small ridge.
        let singular = [1.0, 1.0, 1.0, 1.0];
        let l = cholesky_with_jitter(&singular, 2).unwrap();
        assert!(l.iter().all(|v| v.is_finite()) && l[3] > 0.0 && l[3] < 1e-3);
        assert!(cholesky_with_jitter(&[-1.0], 1).is_err());
    }
}
