//! Instance kernels K(z, x).

use serde::{Deserialize, Serialize};

use crate::mil::error::{MilError, Result};

/// The kernel between instances. Gaussian is the paper's choice and our default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Kernel {
    /// K(x, z) = exp(-sigma * |x - z|^2)  (the paper, section 7.1).
    Gaussian { sigma: f64 },
    /// K(x, z) = <x, z>.
    Linear,
    /// K(x, z) = (<x, z> + coef0)^degree.
    Polynomial { degree: u32, coef0: f64 },
}

impl Kernel {
    pub fn validate(&self) -> Result<()> {
        match *self {
            Kernel::Gaussian { sigma } if !(sigma.is_finite() && sigma > 0.0) => Err(
                MilError::InvalidParameter(format!("gaussian sigma must be > 0, got {sigma}")),
            ),
            Kernel::Polynomial { degree, coef0 } if degree == 0 || !coef0.is_finite() => {
                Err(MilError::InvalidParameter(format!(
                    "polynomial kernel needs degree >= 1 and a finite coef0, got degree {degree}, coef0 {coef0}"
                )))
            }
            _ => Ok(()),
        }
    }

    #[inline]
    pub fn eval(&self, x: &[f64], z: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), z.len());
        match *self {
            Kernel::Gaussian { sigma } => exp_nonpositive(-sigma * sq_dist(x, z)),
            Kernel::Linear => dot(x, z),
            Kernel::Polynomial { degree, coef0 } => (dot(x, z) + coef0).powi(degree as i32),
        }
    }

    /// K(x, z) for every row z of `reps` (row-major, `x.len()` columns) into `out`.
    ///
    /// Compiled three times and picked by the CPU: AVX-512, AVX2, and the x86-64 baseline.
    /// Every lane does the same IEEE operations in the same order (no fused multiply-add), so
    /// the three give the same bits as each other and as `eval`; only the width differs. The
    /// kernel rows are most of a fit and all of a streamed point's work.
    #[inline]
    pub fn row(&self, x: &[f64], reps: &[f64], out: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked on the line above.
                return unsafe { self.row_avx512(x, reps, out) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked on the line above.
                return unsafe { self.row_avx2(x, reps, out) };
            }
        }
        self.row_portable(x, reps, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn row_avx512(&self, x: &[f64], reps: &[f64], out: &mut [f64]) {
        self.row_portable(x, reps, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn row_avx2(&self, x: &[f64], reps: &[f64], out: &mut [f64]) {
        self.row_portable(x, reps, out)
    }

    #[inline(always)]
    fn row_portable(&self, x: &[f64], reps: &[f64], out: &mut [f64]) {
        match *self {
            // Distances first, then one pass of exp that vectorises: as a libm call per
            // value, the exp was a third of a fit.
            Kernel::Gaussian { sigma } => {
                for (o, z) in out.iter_mut().zip(reps.chunks_exact(x.len())) {
                    *o = -sigma * sq_dist(x, z);
                }
                out.iter_mut().for_each(|o| *o = exp_nonpositive(*o));
            }
            _ => {
                for (o, z) in out.iter_mut().zip(reps.chunks_exact(x.len())) {
                    *o = self.eval(x, z);
                }
            }
        }
    }

    /// K(x, z) for every representative z of `reps` into `out`, with the bits of
    /// [`row`](Self::row) on the same representatives. With AVX-512 or AVX2 the distances are
    /// computed for eight representatives side by side, one vector operation (two with AVX2)
    /// advancing all eight (AVX-512: 2.5 x faster than a row's per-representative lanes,
    /// measured at l = 9; AVX2: a fit of ACSF1Windows 28.0 s -> 27.4 s, the exp now the
    /// larger half); elsewhere this is `row`.
    #[inline]
    pub fn row_blocked(&self, x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked on the line above.
                return unsafe { self.row_blocked_avx512(x, reps, out) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked on the line above.
                return unsafe { self.row_blocked_avx2(x, reps, out) };
            }
        }
        self.row(x, &reps.rows, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn row_blocked_avx2(&self, x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
        self.row_blocked_portable(x, reps, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn row_blocked_avx512(&self, x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
        self.row_blocked_portable(x, reps, out)
    }

    #[inline(always)]
    fn row_blocked_portable(&self, x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
        match *self {
            Kernel::Gaussian { sigma } => {
                sq_dists_blocked(x, reps, out);
                out[..reps.k]
                    .iter_mut()
                    .for_each(|o| *o = exp_nonpositive(-sigma * *o));
            }
            _ => self.row_portable(x, &reps.rows, out),
        }
    }

    /// The Gaussian's sigma; None for the other kernels.
    pub fn gaussian_sigma(&self) -> Option<f64> {
        match *self {
            Kernel::Gaussian { sigma } => Some(sigma),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Gaussian { .. } => "gaussian",
            Kernel::Linear => "linear",
            Kernel::Polynomial { .. } => "polynomial",
        }
    }
}

/// Representatives laid out for [`Kernel::row_blocked`]: in blocks of eight, each block
/// dimension-major (the eight values of dimension 0, then of dimension 1, ...; the last
/// block zero-padded), so one vector operation advances eight distances. Built once per
/// fit or per model space.
#[derive(Debug, Clone, PartialEq)]
pub struct RepBlocks {
    dim: usize,
    k: usize,
    blocks: Vec<f64>,
    /// Row-major, for the kernels other than the Gaussian and CPUs without AVX-512.
    rows: Vec<f64>,
}

impl RepBlocks {
    /// From `reps`, row-major with `dim` columns.
    pub fn new(reps: &[f64], dim: usize) -> Self {
        let dim = dim.max(1);
        let k = reps.len() / dim;
        let mut blocks = vec![0.0; k.div_ceil(8) * dim * 8];
        for (z, row) in reps.chunks_exact(dim).enumerate() {
            let block = (z / 8) * dim * 8;
            for (d, &v) in row.iter().enumerate() {
                blocks[block + d * 8 + z % 8] = v;
            }
        }
        Self {
            dim,
            k,
            blocks,
            rows: reps[..k * dim].to_vec(),
        }
    }
}

/// |x - z|^2 for every representative z of `reps` into `out`, with the bits
/// [`Kernel::row_blocked`] computes them: one distance row serves several Gaussian widths
/// ([`gaussian_from_sq_dists`]), where a row per width computed it once per width.
pub fn sq_dists_row(x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked on the line above.
            return unsafe { sq_dists_avx512(x, reps, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked on the line above.
            return unsafe { sq_dists_avx2(x, reps, out) };
        }
    }
    for (o, z) in out.iter_mut().zip(reps.rows.chunks_exact(reps.dim)) {
        *o = sq_dist(x, z);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sq_dists_avx512(x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
    sq_dists_blocked(x, reps, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sq_dists_avx2(x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
    sq_dists_blocked(x, reps, out)
}

/// exp(-sigma d) for every squared distance d of `d2` into `out`: a Gaussian row from
/// [`sq_dists_row`], the same bits as [`Kernel::row_blocked`] at that sigma.
pub fn gaussian_from_sq_dists(sigma: f64, d2: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked on the line above.
            return unsafe { gaussian_from_sq_dists_avx512(sigma, d2, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked on the line above.
            return unsafe { gaussian_from_sq_dists_avx2(sigma, d2, out) };
        }
    }
    gaussian_from_sq_dists_portable(sigma, d2, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gaussian_from_sq_dists_avx512(sigma: f64, d2: &[f64], out: &mut [f64]) {
    gaussian_from_sq_dists_portable(sigma, d2, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gaussian_from_sq_dists_avx2(sigma: f64, d2: &[f64], out: &mut [f64]) {
    gaussian_from_sq_dists_portable(sigma, d2, out)
}

#[inline(always)]
fn gaussian_from_sq_dists_portable(sigma: f64, d2: &[f64], out: &mut [f64]) {
    for (o, &d) in out.iter_mut().zip(d2) {
        *o = exp_nonpositive(-sigma * d);
    }
}

/// |x - z|^2 for every representative z into `out`, each summed as [`sq_dist`] sums it:
/// dimension d in lane d mod 8 up to the last multiple of 8, the rest in a serial tail,
/// the lanes combined in the same tree. Only the loop order differs (eight representatives
/// side by side), so the same IEEE operations give the same bits.
#[inline(always)]
fn sq_dists_blocked(x: &[f64], reps: &RepBlocks, out: &mut [f64]) {
    let dim = reps.dim;
    let n8 = dim - dim % 8;
    for (b, block) in reps.blocks.chunks_exact(dim * 8).enumerate() {
        let mut acc = [[0.0f64; 8]; 8];
        let mut tail = [0.0f64; 8];
        let (head, rest) = block.split_at(n8 * 8);
        for (xc, bc) in x[..n8].chunks_exact(8).zip(head.chunks_exact(64)) {
            for (l, lane) in acc.iter_mut().enumerate() {
                let xd = xc[l];
                for (a, &z) in lane.iter_mut().zip(&bc[l * 8..l * 8 + 8]) {
                    let t = xd - z;
                    *a += t * t;
                }
            }
        }
        for (&xd, col) in x[n8..dim].iter().zip(rest.chunks_exact(8)) {
            for (a, &z) in tail.iter_mut().zip(col) {
                let t = xd - z;
                *a += t * t;
            }
        }
        // All eight lanes combined in registers, then the block's real representatives
        // copied out.
        let mut row = [0.0f64; 8];
        for (i, r) in row.iter_mut().enumerate() {
            *r = ((acc[0][i] + acc[4][i]) + (acc[1][i] + acc[5][i]))
                + ((acc[2][i] + acc[6][i]) + (acc[3][i] + acc[7][i]))
                + tail[i];
        }
        let lo = b * 8;
        let hi = (lo + 8).min(reps.k);
        out[lo..hi].copy_from_slice(&row[..hi - lo]);
    }
}

/// Lanes of [`gaussian_rows_lanes`]: instances side by side.
pub const LANES: usize = 8;

/// K(x_j, z) = exp(-sigma |x_j - z|^2) for `LANES` instances x_j side by side and every
/// representative z of `reps`: `xs` is dimension-major (value d of x_j at `d * LANES + j`),
/// `out` gets K(x_j, z) at `z * LANES + j`. Each lane sums its distance as [`sq_dist`] does
/// (dimension d in lane d mod 8 up to the last multiple of 8, the rest in a serial tail,
/// the same tree) and takes the same exp, so every lane has the bits of [`Kernel::row`] for
/// its instance: only which values share a vector differs. With few representatives
/// (a space's kept ones, often 4) a vector of eight instances is full where a block of
/// eight representatives is half empty.
#[inline(always)]
pub fn gaussian_rows_lanes(sigma: f64, xs: &[f64], reps: &RepBlocks, out: &mut [f64]) {
    let dim = reps.dim;
    let n8 = dim - dim % 8;
    let xs = &xs[..dim * LANES];
    for (rep, o) in reps.rows.chunks_exact(dim).zip(out.chunks_exact_mut(LANES)) {
        let mut acc = [[0.0f64; LANES]; 8];
        let mut tail = [0.0f64; LANES];
        for (zc, xc) in rep[..n8]
            .chunks_exact(8)
            .zip(xs[..n8 * LANES].chunks_exact(8 * LANES))
        {
            for (l, lane) in acc.iter_mut().enumerate() {
                let zd = zc[l];
                for (a, &x) in lane.iter_mut().zip(&xc[l * LANES..(l + 1) * LANES]) {
                    let t = x - zd;
                    *a += t * t;
                }
            }
        }
        for (&zd, xc) in rep[n8..].iter().zip(xs[n8 * LANES..].chunks_exact(LANES)) {
            for (a, &x) in tail.iter_mut().zip(xc) {
                let t = x - zd;
                *a += t * t;
            }
        }
        for (j, o) in o.iter_mut().enumerate() {
            *o = ((acc[0][j] + acc[4][j]) + (acc[1][j] + acc[5][j]))
                + ((acc[2][j] + acc[6][j]) + (acc[3][j] + acc[7][j]))
                + tail[j];
        }
    }
    // One pass of exp over every distance, which vectorises (as in `row_blocked`).
    let k = reps.k;
    out[..k * LANES]
        .iter_mut()
        .for_each(|o| *o = exp_nonpositive(-sigma * *o));
}

#[inline(always)]
fn dot(x: &[f64], z: &[f64]) -> f64 {
    lanes(x, z, |a, b| a * b)
}

/// sum_i f(x_i, z_i) in eight independent lanes, so the compiler can vectorise it (a single
/// running sum is a serial chain it may not reorder). This is the kernels' hot loop:
/// training kernel tables and every streamed point go through it.
#[inline(always)]
fn lanes(x: &[f64], z: &[f64], f: impl Fn(f64, f64) -> f64) -> f64 {
    let n = x.len().min(z.len());
    let (xc, xr) = x[..n].split_at(n - n % 8);
    let (zc, zr) = z[..n].split_at(n - n % 8);
    let mut acc = [0.0f64; 8];
    for (a, b) in xc.chunks_exact(8).zip(zc.chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += f(a[k], b[k]);
        }
    }
    let mut tail = 0.0;
    for (a, b) in xr.iter().zip(zr) {
        tail += f(*a, *b);
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// e^x for x <= 0 (a Gaussian kernel's exponent), branch-free so a loop over a slice
/// vectorises. Cody-Waite reduction x = n ln 2 + r, |r| <= ln 2 / 2, then e^r by its Taylor
/// polynomial to degree 13 (truncation below 1e-17) and the exact scale 2^n. Within 2 ulp
/// of libm's exp (tested); below e^-708 the kernel value is 0.
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    // ln 2 split as fdlibm's exp does: the high part's trailing zeros make n * LN2_HI exact.
    const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52: adding it rounds to an integer
    const FLOOR: f64 = -708.0;
    let xc = if x > FLOOR { x } else { FLOOR };
    let t = xc * std::f64::consts::LOG2_E + SHIFT;
    let n = t - SHIFT;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.0 / 6_227_020_800.0; // 1 / 13!
    for c in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    // n is in [-1022, 0]: 2^n is a normal number built from its exponent bits.
    let n_int = (t.to_bits() as i64).wrapping_sub(SHIFT.to_bits() as i64);
    let scale = f64::from_bits(((n_int + 1023) as u64) << 52);
    let v = p * scale;
    if x > FLOOR {
        v
    } else {
        0.0
    }
}

/// Squared Euclidean distance.
#[inline(always)]
pub fn sq_dist(x: &[f64], z: &[f64]) -> f64 {
    lanes(x, z, |a, b| (a - b) * (a - b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_by_hand() {
        let x = [1.0, 2.0];
        let z = [0.0, 4.0];
        let g = Kernel::Gaussian { sigma: 0.5 }.eval(&x, &z);
        assert!((g - (-0.5f64 * 5.0).exp()).abs() < 1e-15);
        assert_eq!(Kernel::Linear.eval(&x, &z), 8.0);
        assert_eq!(
            Kernel::Polynomial {
                degree: 2,
                coef0: 1.0
            }
            .eval(&x, &z),
            81.0
        );
        assert!(Kernel::Gaussian { sigma: -1.0 }.validate().is_err());
    }

    /// Every build of a kernel row this CPU can run gives the bits of `eval`: the daemon's
    /// scorer and the offline predict may take different builds on different machines.
    #[test]
    fn every_build_of_a_kernel_row_gives_the_bits_of_eval() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for dim in [1, 7, 8, 9, 13, 16, 64, 150] {
            let x: Vec<f64> = (0..dim).map(|_| rng.random_range(-3.0..3.0)).collect();
            let reps: Vec<f64> = (0..dim * 37).map(|_| rng.random_range(-3.0..3.0)).collect();
            for kernel in [
                Kernel::Gaussian { sigma: 0.37 },
                Kernel::Gaussian { sigma: 1e-3 },
                Kernel::Linear,
                Kernel::Polynomial {
                    degree: 3,
                    coef0: 1.0,
                },
            ] {
                let want: Vec<u64> = reps
                    .chunks_exact(dim)
                    .map(|z| kernel.eval(&x, z).to_bits())
                    .collect();
                let mut out = vec![0.0; 37];
                let check = |name: &str, out: &[f64]| {
                    let got: Vec<u64> = out.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "{name}, dim {dim}, {kernel:?}");
                };
                kernel.row_portable(&x, &reps, &mut out);
                check("baseline", &out);
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: AVX2 is present, checked on the line above.
                        unsafe { kernel.row_avx2(&x, &reps, &mut out) };
                        check("avx2", &out);
                    }
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        // SAFETY: AVX-512F is present, checked on the line above.
                        unsafe { kernel.row_avx512(&x, &reps, &mut out) };
                        check("avx512", &out);
                    }
                }
                kernel.row(&x, &reps, &mut out);
                check("dispatched", &out);
                let blocks = RepBlocks::new(&reps, dim);
                kernel.row_blocked_portable(&x, &blocks, &mut out);
                check("blocked baseline", &out);
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: AVX2 is present, checked on the line above.
                        unsafe { kernel.row_blocked_avx2(&x, &blocks, &mut out) };
                        check("blocked avx2", &out);
                    }
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        // SAFETY: AVX-512F is present, checked on the line above.
                        unsafe { kernel.row_blocked_avx512(&x, &blocks, &mut out) };
                        check("blocked avx512", &out);
                    }
                }
                kernel.row_blocked(&x, &blocks, &mut out);
                check("blocked dispatched", &out);
            }
        }
    }

    /// Eight instances side by side, every lane (and a partly filled set) with the bits of
    /// `eval` on its own instance.
    #[test]
    fn gaussian_rows_in_lanes_give_the_bits_of_eval() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for dim in [1, 5, 8, 9, 16, 17, 150] {
            let xs: Vec<Vec<f64>> = (0..LANES)
                .map(|_| (0..dim).map(|_| rng.random_range(-3.0..3.0)).collect())
                .collect();
            let mut lanes = vec![0.0; dim * LANES];
            for (j, x) in xs.iter().enumerate() {
                for (d, &v) in x.iter().enumerate() {
                    lanes[d * LANES + j] = v;
                }
            }
            for k in [1, 4, 9, 37] {
                let reps: Vec<f64> = (0..dim * k).map(|_| rng.random_range(-3.0..3.0)).collect();
                let blocks = RepBlocks::new(&reps, dim);
                for sigma in [0.37, 1e-3, 50.0] {
                    let kernel = Kernel::Gaussian { sigma };
                    let mut out = vec![0.0; k * LANES];
                    gaussian_rows_lanes(sigma, &lanes, &blocks, &mut out);
                    for (j, x) in xs.iter().enumerate() {
                        for (z, rep) in reps.chunks_exact(dim).enumerate() {
                            assert_eq!(
                                out[z * LANES + j].to_bits(),
                                kernel.eval(x, rep).to_bits(),
                                "dim {dim}, k {k}, sigma {sigma}, lane {j}, rep {z}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn exp_nonpositive_is_within_two_ulp_of_libm() {
        let mut worst = 0.0f64;
        let mut x = 0.0f64;
        // Dense near 0 (where kernel values live) and across the whole range.
        while x > -708.0 {
            let (a, b) = (exp_nonpositive(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
            x -= if x > -2.0 { 1.0e-4 } else { 3.7e-3 };
        }
        assert!(
            worst <= 2.0 * f64::EPSILON,
            "worst relative error {worst:e}"
        );
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-709.0), 0.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
        let mut out = [-0.5, -3.0, -800.0, 0.0, -1e-9];
        let want: Vec<f64> = out.iter().map(|&v| exp_nonpositive(v)).collect();
        out.iter_mut().for_each(|o| *o = exp_nonpositive(*o));
        assert_eq!(out.to_vec(), want);
    }
}
