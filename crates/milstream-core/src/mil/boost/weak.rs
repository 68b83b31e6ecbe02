//! The weak learner: the DC algorithm (the paper, Algorithm 2) over one shapelet space,
//! started from the one-hot initialisation of appendix A.3, with subproblem OP2 (l1 ball, an
//! LP) or OP1 (RKHS ball, an SOCP), both solved by constraint generation.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::mil::error::{MilError, Result};
use crate::mil::lp::solver::{ConicProgram, ConicSolution};
use crate::mil::online::rowsum::add_weighted_rows;
use crate::mil::space::kernel_table::KernelTable;

/// Which constraint bounds the shapelet u = sum_z alpha_z Phi(z).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WeakKind {
    /// OP1: alpha' K alpha <= 1 (the RKHS unit ball), an SOCP per DC step.
    Op1,
    /// OP2: |alpha|_1 <= 1, an LP per DC step; sparse, hence interpretable. The default.
    #[default]
    Op2,
}

/// Options of Algorithm 2.
#[derive(Debug, Clone, Copy)]
pub struct WeakParams {
    pub kind: WeakKind,
    /// Stop the DC loop when the edge improves by no more than this.
    pub epsilon: f64,
    pub max_dc_iters: usize,
    /// DC runs from the best one-hot starts (1 = the paper's single start).
    pub starts: usize,
    /// Most constraint-generation rounds of a DC step (OP2); a step stopped short takes
    /// the partial LP's alpha. None = to the step's optimum (the paper's).
    pub generation_rounds: Option<usize>,
}

/// Coefficients below this (relative to the largest) are interior-point noise, set to zero.
const ALPHA_ZERO: f64 = 1e-7;
/// A negative-bag row counts as violated when k_x'alpha exceeds lambda_r by this much.
const VIOLATION_TOL: f64 = 1e-7;
/// Constraint-generation rounds per subproblem before giving up.
const MAX_CG_ROUNDS: usize = 200;
/// Representatives the OP2 working set starts with besides alpha's support.
const INITIAL_COLUMNS: usize = 8;
/// Most representatives priced into the OP2 working set per generation round.
const COLUMNS_PER_ROUND: usize = 10;

/// Rows (negative-bag instances) and columns (representatives) that were binding in the
/// last subproblem; the next one starts from them. Any subset is a valid start, so this only
/// saves generation rounds, never changes the optimum.
#[derive(Debug, Clone, Default)]
pub struct WorkingSet {
    rows: Vec<usize>,
    cols: Vec<usize>,
}

/// A weak hypothesis: sparse alpha over the space's representatives, its edge and outputs.
#[derive(Debug, Clone)]
pub struct WeakHypothesis {
    pub alpha: Vec<(usize, f64)>,
    pub edge: f64,
    pub outputs: Vec<f64>,
    pub dc_iterations: usize,
    pub lp_solves: usize,
    pub rows_generated: usize,
    /// Why the DC loop stopped early, if a subproblem failed.
    pub failure: Option<String>,
}

impl WeakHypothesis {
    /// The constant hypothesis h(B) = sign on `m` bags, with its edge; alpha holds the sign.
    pub fn constant(sign: f64, edge: f64, m: usize) -> Self {
        Self {
            alpha: vec![(0, sign)],
            edge,
            outputs: vec![sign; m],
            dc_iterations: 0,
            lp_solves: 0,
            rows_generated: 0,
            failure: None,
        }
    }
}

fn edge_of(y: &[f64], d: &[f64], outputs: &[f64]) -> f64 {
    y.iter()
        .zip(d)
        .zip(outputs)
        .map(|((y, d), h)| y * d * h)
        .sum()
}

/// Bags with d_i = 0 do not enter objective (6); leaving them out is exact.
pub(crate) fn active_bags(m: usize, d: &[f64]) -> Vec<usize> {
    (0..m).filter(|&i| d[i] > 1e-12).collect()
}

/// Appendix A.3: the edge of every one-hot alpha (either sign), as (edge, representative,
/// coefficient). A table lookup per bag and representative.
fn one_hot_edges(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    kind: WeakKind,
) -> Vec<(f64, usize, f64)> {
    let k = table.k;
    let (mut plus, mut minus) = (vec![0.0; k], vec![0.0; k]);
    add_weighted_rows(&mut plus, &table.bag_max, active, y, d, 1.0);
    add_weighted_rows(&mut minus, &table.bag_min, active, y, d, -1.0);
    let mut one_hot: Vec<(f64, usize, f64)> = Vec::with_capacity(2 * k);
    for z in 0..k {
        let scale = match kind {
            WeakKind::Op2 => 1.0,
            WeakKind::Op1 => 1.0 / table.diag[z].max(1e-300).sqrt(),
        };
        one_hot.push((plus[z] * scale, z, scale));
        one_hot.push((minus[z] * scale, z, -scale));
    }
    one_hot
}

/// The price of a space in a round: its best one-hot edge, a lower bound on what the DC
/// loop reaches from it. Ranks spaces so that only the most promising run the DC loop.
/// `active`: the bags of positive weight ([`active_bags`]).
pub fn one_hot_price(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    kind: WeakKind,
) -> f64 {
    one_hot_edges(table, y, d, active, kind)
        .iter()
        .map(|s| s.0)
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The best mean hypothesis h(B) = sum_z alpha_z mean_{x in B} K(z, x) (beyond the paper:
/// the collective assumption, a soft count of a pattern's occurrences). Linear in alpha, so
/// over the l1 ball its best is a signed one-hot vector: exact, with no DC loop. `skip(z,
/// sign)` leaves out the columns already in a capped master LP; `active` are the bags of
/// positive weight ([`active_bags`], found once a round for every space). Its `outputs` are left
/// empty: every space offers its best each round and few become columns, so the caller
/// asks [`KernelTable::mean_outputs`] for those it keeps.
pub fn best_mean(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    skip: impl Fn(usize, f64) -> bool,
) -> WeakHypothesis {
    let k = table.k;
    let mut edges = vec![0.0; k];
    add_weighted_rows(&mut edges, &table.bag_mean, active, y, d, 1.0);
    let mut best = (f64::NEG_INFINITY, 0, 1.0);
    for (z, &e) in edges.iter().enumerate() {
        let (e, sign) = if e >= 0.0 { (e, 1.0) } else { (-e, -1.0) };
        if e > best.0 && !skip(z, sign) {
            best = (e, z, sign);
        }
    }
    let (edge, z, sign) = best;
    WeakHypothesis {
        alpha: vec![(z, sign)],
        edge,
        outputs: Vec::new(),
        dc_iterations: 0,
        lp_solves: 0,
        rows_generated: 0,
        failure: None,
    }
}

/// Algorithm 2 for sample weights `d` and labels `y` in {-1, +1}.
pub fn weak_learn(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    params: &WeakParams,
    warm: &mut WorkingSet,
) -> Result<WeakHypothesis> {
    let active = active_bags(table.n_bags(), d);
    // Appendix A.3: alpha_0 = the most discriminative one-hot vector (either sign). With
    // `starts` > 1 the DC loop also runs from the next best one-hot vectors and the largest
    // edge wins: the weak-learning problem is non-convex, and a second start is cheap.
    let mut one_hot = one_hot_edges(table, y, d, &active, params.kind);
    one_hot.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut best: Option<WeakHypothesis> = None;
    for &(_, z, a) in one_hot.iter().take(params.starts.max(1)) {
        let h = dc_loop(table, y, d, &active, vec![(z, a)], params, warm);
        if best.as_ref().is_none_or(|b| h.edge > b.edge) {
            best = Some(h);
        }
    }
    Ok(best.expect("at least one start ran"))
}

/// The DC loop of Algorithm 2 from `alpha`. A subproblem the solver fails on ends the loop
/// with the current alpha, which is feasible and so still a valid hypothesis; the failure
/// is reported in the result.
fn dc_loop(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    mut alpha: Vec<(usize, f64)>,
    params: &WeakParams,
    warm: &mut WorkingSet,
) -> WeakHypothesis {
    let mut outputs = table.outputs(&alpha);
    let mut edge = edge_of(y, d, &outputs);
    let mut stats = (0usize, 0usize, 0usize);
    let mut failure = None;
    for _ in 0..params.max_dc_iters {
        stats.0 += 1;
        let DcStep {
            alpha: cand,
            solves,
            rows,
        } = match solve_dc_step(table, y, d, active, &alpha, params, warm) {
            Ok(x) => x,
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        };
        stats.1 += solves;
        stats.2 = stats.2.max(rows);
        let cand_out = table.outputs(&cand);
        let cand_edge = edge_of(y, d, &cand_out);
        // DC steps never increase F - G; stop when the gain is below epsilon.
        if cand_edge <= edge + params.epsilon {
            if cand_edge > edge {
                (alpha, outputs, edge) = (cand, cand_out, cand_edge);
            }
            break;
        }
        (alpha, outputs, edge) = (cand, cand_out, cand_edge);
    }
    WeakHypothesis {
        alpha,
        edge,
        outputs,
        dc_iterations: stats.0,
        lp_solves: stats.1,
        rows_generated: stats.2,
        failure,
    }
}

/// A DC step's new alpha, with the solves and rows it took.
struct DcStep {
    alpha: Vec<(usize, f64)>,
    solves: usize,
    rows: usize,
}

/// One DC step: linearise G at alpha (x_k* = argmax instance of each positive bag) and solve
/// the convex problem (8) (OP'_t). All rows (one per negative-bag instance) and, for OP2, all
/// columns (two per representative) would make a dense LP Clarabel needs seconds for, so it
/// is solved by row and column generation: start from each negative bag's argmax row and
/// alpha's support plus the largest gradient entries; re-solve after adding every bag's most
/// violated instance and the columns of negative reduced cost (priced with the row duals),
/// until neither exists. That is the optimum of the full problem, found with a few dozen
/// rows and columns. OP1's ball couples all coefficients, so it keeps every column.
///
/// With `generation_rounds`, generation stops after that many solves and the step takes the
/// partial LP's alpha: feasible (only rows are missing, and alpha's ball is whole), its
/// edge computed exactly by the caller, which keeps it only if the edge grew. Most of a
/// step's gain comes in its first rounds; the rest of its solves are what made the DC
/// loop cost 40-80x the one-hot fit on bags (issue 26).
fn solve_dc_step(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    alpha: &[(usize, f64)],
    params: &WeakParams,
    warm: &mut WorkingSet,
) -> Result<DcStep> {
    let kind = params.kind;
    let last_round = params
        .generation_rounds
        .filter(|_| kind == WeakKind::Op2)
        .map_or(MAX_CG_ROUNDS, |r| r.clamp(1, MAX_CG_ROUNDS));
    let c = linearised_gradient(table, y, d, active, alpha);
    let neg: Vec<usize> = active.iter().copied().filter(|&i| y[i] < 0.0).collect();
    let mut rows = starting_rows(table, &neg, alpha, warm);
    let mut cols = starting_columns(kind, &c, alpha, warm);
    for round in 1..=MAX_CG_ROUNDS {
        let sub = Subproblem {
            table,
            kind,
            c: &c,
            d,
            neg: &neg,
        };
        let (p, first_row) = sub.program(&cols, &rows);
        let sol = p.solve(&format!(
            "weak learner subproblem {kind:?} (generation round {round}, {} rows, {} representatives)",
            rows.len(),
            cols.len()
        ))?;
        let cand = support(&sol.x[..cols.len()], &cols);
        let mut added = sub.add_violated_rows(&sol, cols.len(), &cand, &mut rows);
        if kind == WeakKind::Op2 && added == 0 {
            added = sub.add_priced_columns(&sol, first_row, &rows, &mut cols);
        }
        // A step stopped short (`generation_rounds`) keeps a non-zero partial alpha.
        if added == 0 || (round == last_round && last_round < MAX_CG_ROUNDS && !cand.is_empty()) {
            if cand.is_empty() {
                // alpha = 0 is optimal only when no shapelet separates the weighted bags.
                return Ok(DcStep {
                    alpha: alpha.to_vec(),
                    solves: round,
                    rows: rows.len(),
                });
            }
            // Remember the binding rows and the support for the next call.
            let mu = &sol.le_duals[first_row..];
            warm.rows = rows
                .iter()
                .zip(mu)
                .filter(|(_, &m)| m > 1e-9)
                .map(|(&(_, x), _)| x)
                .collect();
            warm.cols = cand.iter().map(|&(z, _)| z).collect();
            return Ok(DcStep {
                alpha: cand,
                solves: round,
                rows: rows.len(),
            });
        }
    }
    Err(MilError::Training(format!(
        "constraint generation did not converge in {MAX_CG_ROUNDS} rounds ({} rows, {} representatives)",
        rows.len(),
        cols.len()
    )))
}

/// c_z = sum_{k: y_k=+1} d_k K(z, x_k*): the gradient of the linearised concave part, at
/// each positive bag's best-matching instance under `alpha`.
fn linearised_gradient(
    table: &KernelTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    alpha: &[(usize, f64)],
) -> Vec<f64> {
    let mut c = vec![0.0; table.k];
    for &i in active.iter().filter(|&&i| y[i] > 0.0) {
        let (_, x) = table.bag_score(i, alpha);
        for (cz, v) in c.iter_mut().zip(table.row(x)) {
            *cz += d[i] * v;
        }
    }
    c
}

/// The first rows, `(negative bag r, instance x)`: each negative bag's best match under
/// `alpha`, and the rows that bound the previous solutions (they usually bind again).
fn starting_rows(
    table: &KernelTable,
    neg: &[usize],
    alpha: &[(usize, f64)],
    warm: &WorkingSet,
) -> Vec<(usize, usize)> {
    let mut rows: Vec<(usize, usize)> = neg
        .iter()
        .enumerate()
        .map(|(r, &i)| (r, table.bag_score(i, alpha).1))
        .collect();
    for &x in &warm.rows {
        let i = table.bag_of(x);
        if let Ok(r) = neg.binary_search(&i) {
            if !rows.contains(&(r, x)) {
                rows.push((r, x));
            }
        }
    }
    rows
}

/// The first working set of representatives: OP1 all of them; OP2 alpha's support, the
/// previous solution's, and the largest gradient entries.
fn starting_columns(
    kind: WeakKind,
    c: &[f64],
    alpha: &[(usize, f64)],
    warm: &WorkingSet,
) -> Vec<usize> {
    let k = c.len();
    if kind == WeakKind::Op1 {
        return (0..k).collect();
    }
    let mut by_grad: Vec<usize> = (0..k).collect();
    by_grad.sort_by(|&a, &b| c[b].abs().total_cmp(&c[a].abs()));
    let mut cols: Vec<usize> = alpha.iter().map(|&(z, _)| z).collect();
    for &z in &warm.cols {
        if !cols.contains(&z) {
            cols.push(z);
        }
    }
    for z in by_grad.into_iter().take(INITIAL_COLUMNS) {
        if !cols.contains(&z) {
            cols.push(z);
        }
    }
    cols
}

/// The alpha of a subproblem's solution over the working columns `cols`: its entries above
/// interior-point noise, by representative.
fn support(raw: &[f64], cols: &[usize]) -> Vec<(usize, f64)> {
    let amax = raw.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let mut cand: Vec<(usize, f64)> = raw
        .iter()
        .enumerate()
        .filter(|(_, v)| v.abs() > ALPHA_ZERO * amax.max(1e-300))
        .map(|(j, &v)| (cols[j], v))
        .collect();
    cand.sort_unstable_by_key(|&(z, _)| z);
    cand
}

/// The convex problem (8) of one DC step, restricted to working rows and columns.
struct Subproblem<'a> {
    table: &'a KernelTable<'a>,
    kind: WeakKind,
    /// The linearised gradient (`linearised_gradient`).
    c: &'a [f64],
    d: &'a [f64],
    /// The negative bags (with positive weight), row r of which is `neg[r]`.
    neg: &'a [usize],
}

impl Subproblem<'_> {
    /// The program over columns `cols` and rows `rows`, with the index of its first
    /// generated row. Variables: OP2 alpha (nc), t (nc) with |alpha_j| <= t_j, then
    /// lambda_r; OP1 alpha (k), then lambda_r. Generated rows touch alpha only, so the KKT
    /// system's dense block is nc x nc, not 2nc x 2nc as with alpha = a+ - a-.
    fn program(&self, cols: &[usize], rows: &[(usize, usize)]) -> (ConicProgram, usize) {
        let (table, kind, k, nc) = (self.table, self.kind, self.table.k, cols.len());
        let n_alpha = self.n_alpha(nc);
        let nv = n_alpha + self.neg.len();
        let lam = |r: usize| n_alpha + r;
        let mut q = vec![0.0; nv];
        for (j, &z) in cols.iter().enumerate() {
            q[j] = -self.c[z];
        }
        for (r, &i) in self.neg.iter().enumerate() {
            q[lam(r)] = self.d[i];
        }
        let mut p = ConicProgram::new(nv);
        p.set_objective(q);
        match kind {
            WeakKind::Op2 => {
                // |alpha|_1 <= 1 as sum(t) <= 1, alpha_j - t_j <= 0, -alpha_j - t_j <= 0.
                p.add_le((nc..2 * nc).map(|j| (j, 1.0)).collect(), 1.0);
                for j in 0..nc {
                    p.add_le(vec![(j, 1.0), (nc + j, -1.0)], 0.0);
                    p.add_le(vec![(j, -1.0), (nc + j, -1.0)], 0.0);
                }
            }
            WeakKind::Op1 => {
                // alpha' K alpha <= 1  <=>  (1, L'alpha) in the second-order cone.
                let l = table
                    .chol
                    .as_ref()
                    .expect("OP1 tables carry a Cholesky factor");
                let mut soc = vec![(Vec::new(), 1.0)];
                for col in 0..k {
                    // (L'alpha)_col = sum_row L[row][col] alpha_row, row >= col.
                    let row: Vec<(usize, f64)> = (col..k).map(|r| (r, -l[r * k + col])).collect();
                    soc.push((row, 0.0));
                }
                p.add_soc(soc);
            }
        }
        let first_row = p.n_rows()
            - match kind {
                WeakKind::Op2 => 0,
                WeakKind::Op1 => k + 1,
            };
        // k_x' alpha <= lambda_r for the generated rows of negative bag r (eq. 8).
        for &(r, x) in rows {
            let kx = table.row(x);
            let mut row: Vec<(usize, f64)> = Vec::with_capacity(nc + 1);
            for (j, &z) in cols.iter().enumerate() {
                row.push((j, kx[z]));
            }
            row.push((lam(r), -1.0));
            p.add_le(row, 0.0);
        }
        (p, first_row)
    }

    /// The variables before the lambdas, over `nc` working columns.
    fn n_alpha(&self, nc: usize) -> usize {
        match self.kind {
            WeakKind::Op2 => 2 * nc,
            WeakKind::Op1 => nc,
        }
    }

    /// Adds every negative bag's most violated instance under `cand` as a row (the program
    /// was over `nc` columns); how many.
    fn add_violated_rows(
        &self,
        sol: &ConicSolution,
        nc: usize,
        cand: &[(usize, f64)],
        rows: &mut Vec<(usize, usize)>,
    ) -> usize {
        let n_alpha = self.n_alpha(nc);
        let mut added = 0;
        for (r, &i) in self.neg.iter().enumerate() {
            let (s, x) = self.table.bag_score(i, cand);
            let lambda = sol.x[n_alpha + r];
            if s > lambda + VIOLATION_TOL * (1.0 + lambda.abs()) && !rows.contains(&(r, x)) {
                rows.push((r, x));
                added += 1;
            }
        }
        added
    }

    /// Columns (OP2): a representative outside the working set can improve the LP iff
    /// |c_z - sum mu K(z, x)| > beta, with beta the l1 row's dual and mu the generated
    /// rows' (the reduced costs of its alpha_z and t_z cannot both be made >= 0). Adds the
    /// most negative few; how many.
    fn add_priced_columns(
        &self,
        sol: &ConicSolution,
        first_row: usize,
        rows: &[(usize, usize)],
        cols: &mut Vec<usize>,
    ) -> usize {
        let (table, c) = (self.table, self.c);
        let beta = sol.le_duals[0];
        let mu = &sol.le_duals[first_row..];
        let mut priced: Vec<(f64, usize)> = (0..table.k)
            .filter(|z| !cols.contains(z))
            .map(|z| {
                let s: f64 = rows
                    .iter()
                    .zip(mu)
                    .map(|(&(_, x), m)| m * table.row(x)[z])
                    .sum();
                (beta - (c[z] - s).abs(), z)
            })
            .filter(|&(rc, _)| rc < -VIOLATION_TOL * (1.0 + beta.abs()))
            .collect();
        priced.sort_by(|a, b| a.0.total_cmp(&b.0));
        let new: Vec<usize> = priced
            .iter()
            .take(COLUMNS_PER_ROUND)
            .map(|&(_, z)| z)
            .collect();
        cols.extend(&new);
        new.len()
    }
}

/// The spaces whose weak learner (its one-hot start, then the DC loop when on) runs: the
/// `n` best by their one-hot edge (every space when it is 0 or there are no more).
pub(crate) fn dc_candidates(
    tables: &[&KernelTable],
    y: &[f64],
    d: &[f64],
    n: usize,
    kind: WeakKind,
) -> Vec<usize> {
    if n == 0 || n >= tables.len() {
        return (0..tables.len()).collect();
    }
    let active = active_bags(y.len(), d);
    let prices: Vec<f64> = tables
        .par_iter()
        .map(|t| one_hot_price(t, y, d, &active, kind))
        .collect();
    let mut order: Vec<usize> = (0..tables.len()).collect();
    order.sort_by(|&a, &b| prices[b].total_cmp(&prices[a]));
    order.truncate(n);
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::bag::InstanceSet;
    use crate::mil::space::kernel::Kernel;

    /// Two 1-d bags: positive {0, 3}, negative {0}. Representatives at 0 and 3, linear
    /// kernel. The best shapelet in the l1 ball puts all weight on z = 3:
    /// h(B+) = max(0, 9) = 9, h(B-) = 0, edge = 0.5 * 9 = 4.5.
    fn tiny() -> (InstanceSet, Vec<f64>) {
        let set = InstanceSet {
            dim: 1,
            data: vec![0.0, 3.0, 0.0],
            offsets: vec![0, 2, 3],
        };
        (set, vec![0.0, 3.0])
    }

    #[test]
    fn op2_on_a_tiny_problem() {
        let (set, reps) = tiny();
        let t = KernelTable::new(&set, &reps, &Kernel::Linear, false, 1).unwrap();
        let p = WeakParams {
            kind: WeakKind::Op2,
            epsilon: 1e-9,
            max_dc_iters: 10,
            starts: 1,
            generation_rounds: None,
        };
        let h = weak_learn(
            &t,
            &[1.0, -1.0],
            &[0.5, 0.5],
            &p,
            &mut WorkingSet::default(),
        )
        .unwrap();
        assert_eq!(h.alpha.len(), 1);
        assert_eq!(h.alpha[0].0, 1);
        assert!((h.alpha[0].1 - 1.0).abs() < 1e-6);
        assert!((h.edge - 4.5).abs() < 1e-6, "{}", h.edge);
    }

    /// 1-d, Gaussian sigma = 1: positive bag {0}, negative bag {1}, representatives {0, 1},
    /// d = (1/2, 1/2). The edge of alpha is 0.5 (1 - e^-1)(a0 - a1).
    fn gaussian_pair(kind: WeakKind) -> WeakHypothesis {
        let set = InstanceSet {
            dim: 1,
            data: vec![0.0, 1.0],
            offsets: vec![0, 1, 2],
        };
        let t = KernelTable::new(
            &set,
            &[0.0, 1.0],
            &Kernel::Gaussian { sigma: 1.0 },
            kind == WeakKind::Op1,
            1,
        )
        .unwrap();
        let p = WeakParams {
            kind,
            epsilon: 1e-9,
            max_dc_iters: 10,
            starts: 1,
            generation_rounds: None,
        };
        weak_learn(
            &t,
            &[1.0, -1.0],
            &[0.5, 0.5],
            &p,
            &mut WorkingSet::default(),
        )
        .unwrap()
    }

    #[test]
    fn op2_lp_matches_hand_solution_with_gaussian() {
        // On the l1 ball the edge is maximised by a = (1, 0): 0.5 (1 - e^-1).
        let h = gaussian_pair(WeakKind::Op2);
        let e1 = (-1.0f64).exp();
        assert!((h.edge - 0.5 * (1.0 - e1)).abs() < 1e-6, "{}", h.edge);
    }

    #[test]
    fn op1_on_a_tiny_problem() {
        // On the RKHS ball, with K = [[1, e],[e, 1]] (e = e^-1), the maximiser subject to
        // a'Ka <= 1 is a = t (1, -1) with t^2 (2 - 2e) = 1, giving edge (1 - e) / sqrt(2 - 2e).
        let h = gaussian_pair(WeakKind::Op1);
        let e = (-1.0f64).exp();
        let want = (1.0 - e) / (2.0 - 2.0 * e).sqrt();
        assert!((h.edge - want).abs() < 1e-5, "{} vs {want}", h.edge);
        assert!((h.alpha[0].1 + h.alpha[1].1).abs() < 1e-5, "{:?}", h.alpha);
    }

    #[test]
    fn constraint_generation_equals_full_lp() {
        // A negative bag with many instances: CG must reach the same edge as brute force
        // over the one-hot and the LP with every row.
        let mut data = vec![0.0, 0.2, 2.0];
        let neg: Vec<f64> = (0..30).map(|i| -3.0 + 0.2 * i as f64).collect();
        data.extend_from_slice(&neg);
        let set = InstanceSet {
            dim: 1,
            data,
            offsets: vec![0, 3, 33],
        };
        let reps: Vec<f64> = (0..12).map(|i| -3.0 + 0.5 * i as f64).collect();
        let kern = Kernel::Gaussian { sigma: 2.0 };
        let t = KernelTable::new(&set, &reps, &kern, false, 1).unwrap();
        let p = WeakParams {
            kind: WeakKind::Op2,
            epsilon: 1e-9,
            max_dc_iters: 10,
            starts: 1,
            generation_rounds: None,
        };
        let y = [1.0, -1.0];
        let d = [0.5, 0.5];
        let h = weak_learn(&t, &y, &d, &p, &mut WorkingSet::default()).unwrap();
        // Full LP with all 30 rows at the same linearisation point.
        let mut full = ConicProgram::new(2 * 12 + 1);
        let (_, xstar) = t.bag_score(0, &h.alpha);
        let mut q = vec![0.0; 25];
        for z in 0..12 {
            q[z] = -0.5 * t.row(xstar)[z];
            q[12 + z] = 0.5 * t.row(xstar)[z];
        }
        q[24] = 0.5;
        full.set_objective(q);
        full.add_le((0..24).map(|j| (j, 1.0)).collect(), 1.0);
        for j in 0..24 {
            full.add_le(vec![(j, -1.0)], 0.0);
        }
        for x in 3..33 {
            let mut row: Vec<(usize, f64)> = Vec::new();
            for z in 0..12 {
                row.push((z, t.row(x)[z]));
                row.push((12 + z, -t.row(x)[z]));
            }
            row.push((24, -1.0));
            full.add_le(row, 0.0);
        }
        let s = full.solve("full").unwrap();
        assert!(
            (-s.objective - h.edge).abs() < 1e-5,
            "full {} vs cg {}",
            -s.objective,
            h.edge
        );
        assert!(h.rows_generated < 30);
    }

    #[test]
    fn a_step_stopped_short_still_improves_on_its_one_hot_start() {
        // 12 bags of 10 two-feature instances (a fixed LCG), 60 representatives: the exact
        // step needs several generation rounds; one round keeps an edge between the one-hot
        // start's and the exact step's, in one LP solve.
        let mut u = crate::mil::test_draws::uniform(12345);
        let mut next = || u() * 4.0 - 2.0;
        let data: Vec<f64> = (0..12 * 10 * 2).map(|_| next()).collect();
        let set = InstanceSet {
            dim: 2,
            data: data.clone(),
            offsets: (0..=12).map(|i| i * 10).collect(),
        };
        let reps: Vec<f64> = data[..60 * 2].to_vec();
        let kern = Kernel::Gaussian { sigma: 1.0 };
        let t = KernelTable::new(&set, &reps, &kern, false, 1).unwrap();
        let y: Vec<f64> = (0..12)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let d = vec![1.0 / 12.0; 12];
        let learn = |max_dc_iters, generation_rounds| {
            let p = WeakParams {
                kind: WeakKind::Op2,
                epsilon: 1e-9,
                max_dc_iters,
                starts: 1,
                generation_rounds,
            };
            weak_learn(&t, &y, &d, &p, &mut WorkingSet::default()).unwrap()
        };
        let (one_hot, short, exact) = (learn(0, None), learn(1, Some(1)), learn(1, None));
        assert!(
            short.edge >= one_hot.edge - 1e-12,
            "{} < {}",
            short.edge,
            one_hot.edge
        );
        assert!(
            short.edge <= exact.edge + 1e-6,
            "{} > {}",
            short.edge,
            exact.edge
        );
        assert_eq!(short.lp_solves, 1);
        assert!(
            exact.lp_solves > 1,
            "the exact step generates rows or columns here"
        );
    }
}
