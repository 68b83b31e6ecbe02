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
            Kernel::Gaussian { sigma } => {
                let mut d = 0.0;
                for (a, b) in x.iter().zip(z) {
                    let t = a - b;
                    d += t * t;
                }
                (-sigma * d).exp()
            }
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
    x.iter().zip(z).map(|(a, b)| a * b).sum()
}

/// Squared Euclidean distance.
#[inline]
pub fn sq_dist(x: &[f64], z: &[f64]) -> f64 {
    x.iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum()
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
