//! A thin builder over Clarabel for the LPs and SOCPs of this crate, so LPBoost and the weak
//! learner state their problems row by row and can be unit-tested on two-variable problems.
//!
//! Clarabel solves  min q'x  s.t.  b - A x = s,  s in K.  Rows are grouped by cone in the
//! order Clarabel needs (equalities, then inequalities, then each second-order cone block);
//! duals come back in the order the rows were added within each group.
#![allow(non_snake_case)]

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};

use crate::mil::error::{MilError, Result};

type Row = Vec<(usize, f64)>;

/// A linear (or second-order cone) program in `n` variables, optionally with a convex
/// quadratic term ½x'Px (a QP).
#[derive(Debug, Clone)]
pub struct ConicProgram {
    n: usize,
    q: Vec<f64>,
    /// Upper-triangular entries (i <= j) of P.
    p_upper: Vec<(usize, usize, f64)>,
    eq: Vec<(Row, f64)>,
    le: Vec<(Row, f64)>,
    soc: Vec<Vec<(Row, f64)>>,
}

/// A solved program: primal `x`, and the duals of the equality and inequality rows.
#[derive(Debug, Clone)]
pub struct ConicSolution {
    pub x: Vec<f64>,
    pub eq_duals: Vec<f64>,
    pub le_duals: Vec<f64>,
    pub objective: f64,
    pub iterations: u32,
}

impl ConicProgram {
    pub fn new(n: usize) -> Self {
        Self {
            n,
            q: vec![0.0; n],
            p_upper: Vec::new(),
            eq: Vec::new(),
            le: Vec::new(),
            soc: Vec::new(),
        }
    }

    pub fn n_vars(&self) -> usize {
        self.n
    }

    pub fn n_rows(&self) -> usize {
        self.eq.len() + self.le.len() + self.soc.iter().map(Vec::len).sum::<usize>()
    }

    /// Minimise `q'x`.
    pub fn set_objective(&mut self, q: Vec<f64>) {
        assert_eq!(
            q.len(),
            self.n,
            "objective length must equal the number of variables"
        );
        self.q = q;
    }

    /// Adds ½x'Px to the objective, P symmetric positive semidefinite, given densely
    /// (row-major n x n); only its upper triangle is read.
    pub fn set_quadratic_dense(&mut self, p: &[f64]) {
        assert_eq!(p.len(), self.n * self.n, "P must be n x n");
        self.p_upper.clear();
        for j in 0..self.n {
            for i in 0..=j {
                let v = p[i * self.n + j];
                if v != 0.0 {
                    self.p_upper.push((i, j, v));
                }
            }
        }
    }

    /// `a'x = b`.
    pub fn add_eq(&mut self, a: Row, b: f64) {
        self.eq.push((a, b));
    }

    /// `a'x <= b`; returns the row's index among the inequalities.
    pub fn add_le(&mut self, a: Row, b: f64) -> usize {
        self.le.push((a, b));
        self.le.len() - 1
    }

    /// `(b_0 - a_0'x, ..., b_p - a_p'x)` in the second-order cone `s_0 >= |s_1..p|`.
    pub fn add_soc(&mut self, rows: Vec<(Row, f64)>) {
        assert!(
            rows.len() >= 2,
            "a second-order cone needs at least two rows"
        );
        self.soc.push(rows);
    }

    /// Solve; anything but a (possibly reduced-accuracy) solution is an error with `context`.
    pub fn solve(&self, context: &str) -> Result<ConicSolution> {
        let m = self.n_rows();
        // Column-major assembly of A from the rows.
        let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); self.n];
        let mut b = Vec::with_capacity(m);
        let all_rows = self
            .eq
            .iter()
            .chain(self.le.iter())
            .chain(self.soc.iter().flat_map(|blk| blk.iter()));
        for (r, (row, rhs)) in all_rows.enumerate() {
            for &(j, v) in row {
                if v != 0.0 {
                    cols[j].push((r, v));
                }
            }
            b.push(*rhs);
        }
        let mut colptr = Vec::with_capacity(self.n + 1);
        let mut rowval = Vec::new();
        let mut nzval = Vec::new();
        colptr.push(0);
        for col in &mut cols {
            col.sort_by_key(|&(i, _)| i);
            // Merge duplicate entries of one (row, column): CSC needs them unique.
            let mut last: Option<usize> = None;
            for &(i, v) in col.iter() {
                if last == Some(i) {
                    *nzval.last_mut().expect("a previous entry exists") += v;
                } else {
                    rowval.push(i);
                    nzval.push(v);
                    last = Some(i);
                }
            }
            colptr.push(rowval.len());
        }
        let A = CscMatrix::new(m, self.n, colptr, rowval, nzval);
        let P = if self.p_upper.is_empty() {
            CscMatrix::<f64>::zeros((self.n, self.n))
        } else {
            // Column-major, rows ascending within a column (entries were pushed that way).
            let mut colptr = vec![0usize; self.n + 1];
            for &(_, j, _) in &self.p_upper {
                colptr[j + 1] += 1;
            }
            for j in 0..self.n {
                colptr[j + 1] += colptr[j];
            }
            let rowval = self.p_upper.iter().map(|e| e.0).collect();
            let nzval = self.p_upper.iter().map(|e| e.2).collect();
            CscMatrix::new(self.n, self.n, colptr, rowval, nzval)
        };
        let mut cones = Vec::new();
        if !self.eq.is_empty() {
            cones.push(SupportedConeT::ZeroConeT(self.eq.len()));
        }
        if !self.le.is_empty() {
            cones.push(SupportedConeT::NonnegativeConeT(self.le.len()));
        }
        for blk in &self.soc {
            cones.push(SupportedConeT::SecondOrderConeT(blk.len()));
        }
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .max_iter(200)
            .build()
            .expect("static Clarabel settings are valid");
        let fail = |status: String, iterations: u32| MilError::Solver {
            context: context.to_string(),
            status,
            iterations,
            vars: self.n,
            rows: m,
        };
        let mut solver = DefaultSolver::new(&P, &self.q, &A, &b, &cones, settings)
            .map_err(|e| fail(format!("setup error: {e}"), 0))?;
        solver.solve();
        let sol = &solver.solution;
        match sol.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => {}
            other => return Err(fail(format!("{other:?}"), sol.iterations)),
        }
        let ne = self.eq.len();
        let nl = self.le.len();
        Ok(ConicSolution {
            x: sol.x.clone(),
            eq_duals: sol.z[..ne].to_vec(),
            le_duals: sol.z[ne..ne + nl].to_vec(),
            objective: sol.obj_val,
            iterations: sol.iterations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_variable_lp() {
        // min -x - y  s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0  ->  (1.6, 1.2), obj -2.8
        let mut p = ConicProgram::new(2);
        p.set_objective(vec![-1.0, -1.0]);
        p.add_le(vec![(0, 1.0), (1, 2.0)], 4.0);
        p.add_le(vec![(0, 3.0), (1, 1.0)], 6.0);
        p.add_le(vec![(0, -1.0)], 0.0);
        p.add_le(vec![(1, -1.0)], 0.0);
        let s = p.solve("test").unwrap();
        assert!(
            (s.x[0] - 1.6).abs() < 1e-6 && (s.x[1] - 1.2).abs() < 1e-6,
            "{:?}",
            s.x
        );
        assert!((s.objective + 2.8).abs() < 1e-6);
        // Duals of the two binding rows: 0.4 and 0.2 (c = A' z).
        assert!((s.le_duals[0] - 0.4).abs() < 1e-6 && (s.le_duals[1] - 0.2).abs() < 1e-6);
    }

    #[test]
    fn socp_unit_disc() {
        // max x + y on the unit disc -> (1/sqrt2, 1/sqrt2).
        let mut p = ConicProgram::new(2);
        p.set_objective(vec![-1.0, -1.0]);
        p.add_soc(vec![
            (vec![], 1.0),
            (vec![(0, -1.0)], 0.0),
            (vec![(1, -1.0)], 0.0),
        ]);
        let s = p.solve("test").unwrap();
        let h = 1.0 / 2f64.sqrt();
        assert!(
            (s.x[0] - h).abs() < 1e-6 && (s.x[1] - h).abs() < 1e-6,
            "{:?}",
            s.x
        );
    }

    #[test]
    fn infeasible_is_an_error_with_context() {
        let mut p = ConicProgram::new(1);
        p.add_le(vec![(0, 1.0)], -1.0);
        p.add_le(vec![(0, -1.0)], -1.0);
        let e = p.solve("tiny infeasible LP").unwrap_err();
        assert!(e.to_string().contains("tiny infeasible LP"), "{e}");
        assert!(e.to_string().contains("Infeasible"), "{e}");
    }
}
