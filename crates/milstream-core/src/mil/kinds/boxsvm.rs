//! The box-counting kernel SVM (Tao, Scott, Vinodchandran and Osugi, "A Kernel for
//! Generalized Multiple-Instance Learning"): bags are discretised onto {0..s}^d, compared
//! by the number of boxes holding a point of each ([`crate::mil::kinds::boxcount`], FPRAS of section
//! 5.2), mapped through the sub-polynomial empirical kernel map (section 5.3) and separated
//! by the soft-margin SVM of [`crate::mil::kinds::svm`].

use serde::{Deserialize, Serialize};

use crate::mil::bag::{Bag, Dataset};
use crate::mil::error::{MilError, Result};
use crate::mil::kinds::boxcount::{empirical_gram, BoxKernel, Discretizer, GridBag};
use crate::mil::kinds::svm::{binary_bags, fit_dual};

/// Hyperparameters of the box-counting kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BoxKernelParams {
    /// Grid resolution: every feature is discretised to {0..s} over its training range.
    pub s: u32,
    /// The SVM's soft-margin bound C (the features are scaled to unit mean squared norm).
    pub c: f64,
    /// FPRAS relative error and failure probability (the paper: 0.1 and 0.01).
    pub epsilon: f64,
    pub delta: f64,
    /// Exponent rho of the sub-polynomial map x -> x^rho. None: the exponent that maps the
    /// largest training count to e^10, i.e. 10 / max ln k, capped at 0.9. That is the
    /// paper's 1/50 at MUSK's counts (ln k about 500 at d = 166), and stays useful at low d,
    /// where a fixed 1/50 flattens every count to about 1.
    pub rho: Option<f64>,
    /// Reference bags of the empirical kernel map include the unlabeled bags given to the
    /// fit (cross-validation passes its test fold): the paper's "transduction".
    pub transductive: bool,
}

impl Default for BoxKernelParams {
    fn default() -> Self {
        Self {
            s: 20,
            c: 100.0,
            epsilon: 0.1,
            delta: 0.01,
            rho: None,
            transductive: false,
        }
    }
}

impl BoxKernelParams {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(MilError::InvalidParameter(m));
        if self.s == 0 || self.s > crate::mil::kinds::boxcount::MAX_S {
            return bad(format!(
                "box grid s must be in 1..={}, got {}",
                crate::mil::kinds::boxcount::MAX_S,
                self.s
            ));
        }
        if !(self.c > 0.0 && self.c.is_finite()) {
            return bad(format!("box SVM C must be > 0, got {}", self.c));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0 && self.delta > 0.0 && self.delta < 1.0) {
            return bad(format!(
                "box epsilon and delta must be in (0, 1), got {} and {}",
                self.epsilon, self.delta
            ));
        }
        if self.rho.is_some_and(|r| !(r > 0.0 && r < 1.0)) {
            return bad(format!("rho must be in (0, 1), got {:?}", self.rho));
        }
        Ok(())
    }
}

const AUTO_RHO_CAP: f64 = 0.9;

/// A fitted box-counting kernel SVM. The decision is linear in the empirical features:
/// f(B) = sum_j w_j phi_j(B) + b with phi_j(B) = c * k(B, R_j)^rho over the reference bags
/// R_j, and w = sum_i coef_i phi(B_i) the SVM's expansion over the training bags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoxSvmModel {
    /// [negative, positive] (sorted; the second is positive).
    pub classes: [String; 2],
    pub discretizer: Discretizer,
    pub kernel: BoxKernel,
    /// x_1..x_n of the empirical map: the training bags (and with transduction the
    /// unlabeled bags the fit saw), on the grid.
    pub reference: Vec<GridBag>,
    /// phi_j = exp(rho (ln k - ln_shift)) * feature_scale: the shift keeps exp in range, the
    /// scale makes the training bags' mean ||phi||^2 one, so C means the same on any data.
    pub ln_shift: f64,
    pub feature_scale: f64,
    pub weights: Vec<f64>,
    pub bias: f64,
    pub n_support: usize,
    pub transductive: bool,
}

impl BoxSvmModel {
    /// Fits on a binary bag dataset; `unlabeled` bags join the reference set when
    /// `p.transductive` (the paper's transduction), and are ignored otherwise.
    pub fn fit(ds: &Dataset, unlabeled: &[&Bag], p: &BoxKernelParams, seed: u64) -> Result<Self> {
        p.validate()?;
        let (bags, classes, y) = binary_bags(ds, "the box-counting kernel SVM")?;
        // Ranges from the training bags only: the grid must not depend on what is scored.
        let discretizer = Discretizer::fit(&bags, p.s)?;
        let kernel = BoxKernel::new(p.s, p.epsilon, p.delta, seed)?;
        let train: Vec<GridBag> = bags
            .iter()
            .map(|b| discretizer.apply(b))
            .collect::<Result<_>>()?;
        let mut reference = train.clone();
        if p.transductive {
            for b in unlabeled {
                reference.push(discretizer.apply(b)?);
            }
        }
        let n_ref = reference.len();
        let ln_k = kernel.ln_gram(&train, &reference);
        let ln_shift = ln_k
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        if !ln_shift.is_finite() {
            return Err(MilError::Training(
                "the box-counting kernel is not finite on the training bags".into(),
            ));
        }
        let rho = p
            .rho
            .unwrap_or_else(|| (10.0 / ln_shift.max(1.0)).min(AUTO_RHO_CAP));
        let kernel = kernel.with_rho(rho)?;
        let raw: Vec<f64> = ln_k.iter().map(|&l| (rho * (l - ln_shift)).exp()).collect();
        let mean_sq = raw.iter().map(|v| v * v).sum::<f64>() / bags.len() as f64;
        let feature_scale = if mean_sq > 0.0 {
            mean_sq.sqrt().recip()
        } else {
            1.0
        };
        let phi: Vec<f64> = raw.iter().map(|v| v * feature_scale).collect();
        // Section 5.3: k_emp(x, y) = phi_n(x) . phi_n(y), then the SVM on it.
        let gram = empirical_gram(&phi, &phi, n_ref);
        let dual = fit_dual(&gram, &y, &vec![p.c; bags.len()])?;
        let mut weights = vec![0.0; n_ref];
        for (i, row) in phi.chunks_exact(n_ref).enumerate() {
            for (w, v) in weights.iter_mut().zip(row) {
                *w += dual.coef[i] * v;
            }
        }
        Ok(Self {
            classes,
            discretizer,
            kernel,
            reference,
            ln_shift,
            feature_scale,
            weights,
            bias: dual.bias,
            n_support: dual.support.len(),
            transductive: p.transductive,
        })
    }

    /// The bag's empirical features phi_j, one per reference bag.
    pub fn features(&self, bag: &Bag) -> Result<Vec<f64>> {
        let grid = self.discretizer.apply(bag)?;
        let ln_k = self
            .kernel
            .ln_gram(std::slice::from_ref(&grid), &self.reference);
        Ok(ln_k
            .iter()
            .map(|&l| (self.kernel.rho() * (l - self.ln_shift)).exp() * self.feature_scale)
            .collect())
    }

    /// f(B) = w . phi(B) + b, and the per-reference-bag terms w_j phi_j(B).
    pub fn decision(&self, bag: &Bag) -> Result<(f64, Vec<f64>)> {
        let phi = self.features(bag)?;
        let terms: Vec<f64> = self.weights.iter().zip(&phi).map(|(w, v)| w * v).collect();
        Ok((terms.iter().sum::<f64>() + self.bias, terms))
    }

    pub fn dim(&self) -> usize {
        self.discretizer.dim()
    }

    pub fn validate(&self) -> Result<()> {
        self.kernel.validate()?;
        let ok = !self.reference.is_empty()
            && self.weights.len() == self.reference.len()
            && self.reference.iter().all(|r| r.dim() == self.dim())
            && self.ln_shift.is_finite()
            && self.feature_scale > 0.0;
        if ok {
            Ok(())
        } else {
            Err(MilError::Artifact(
                "box-kernel SVM reference bags, weights and grid disagree in shape".into(),
            ))
        }
    }
}
