//! Instance kernels K(z, x).

use serde::{Deserialize, Serialize};

use super::error::{MilError, Result};

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
            Kernel::Gaussian { sigma } => (-sigma * sq_dist(x, z)).exp(),
            Kernel::Linear => dot(x, z),
            Kernel::Polynomial { degree, coef0 } => (dot(x, z) + coef0).powi(degree as i32),
        }
    }

    /// K(x, z) for every row z of `reps` (row-major, `x.len()` columns) into `out`.
    #[inline]
    pub fn row(&self, x: &[f64], reps: &[f64], out: &mut [f64]) {
        for (o, z) in out.iter_mut().zip(reps.chunks_exact(x.len())) {
            *o = self.eval(x, z);
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

#[inline]
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

/// Squared Euclidean distance.
#[inline]
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
}
