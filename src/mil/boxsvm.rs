//! The box-counting kernel SVM (Tao, Scott, Vinodchandran and Osugi, "A Kernel for
//! Generalized Multiple-Instance Learning"): bags are discretised onto {0..s}^d, compared
//! by the number of boxes holding a point of each ([`super::boxcount`], FPRAS of section
//! 5.2), mapped through the sub-polynomial empirical kernel map (section 5.3) and separated
//! by the soft-margin SVM of [`super::svm`].

use serde::{Deserialize, Serialize};

use super::error::{MilError, Result};

/// Hyperparameters of the box-counting kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BoxKernelParams {
    /// Grid resolution: every feature is discretised to {0..s} over its training range.
    pub s: u32,
    /// FPRAS relative error and failure probability (the paper: 0.1 and 0.01).
    pub epsilon: f64,
    pub delta: f64,
    /// Exponent rho of the sub-polynomial map x -> x^rho (the paper: 1/50 on Musk).
    pub rho: f64,
    /// Reference bags of the empirical kernel map include the unlabeled bags given to the
    /// fit (cross-validation passes its test fold): the paper's "transduction".
    pub transductive: bool,
}

impl Default for BoxKernelParams {
    fn default() -> Self {
        Self {
            s: 10,
            epsilon: 0.1,
            delta: 0.01,
            rho: 1.0 / 50.0,
            transductive: false,
        }
    }
}

impl BoxKernelParams {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(MilError::InvalidParameter(m));
        if self.s == 0 || self.s > u16::MAX as u32 {
            return bad(format!("box grid s must be in 1..=65535, got {}", self.s));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) || !(self.delta > 0.0 && self.delta < 1.0)
        {
            return bad(format!(
                "box epsilon and delta must be in (0, 1), got {} and {}",
                self.epsilon, self.delta
            ));
        }
        if !(self.rho > 0.0 && self.rho <= 1.0) {
            return bad(format!("rho must be in (0, 1], got {}", self.rho));
        }
        Ok(())
    }
}
