//! A bounded-variable revised primal simplex with an explicit basis inverse, so LPBoost's master
//! LP (the primal (4) of Algorithm 1) is re-optimised from the previous round's basis: a
//! new column joins nonbasic at its lower bound, the last basis stays primal feasible, and
//! the next solve usually takes a few pivots where the interior-point solver starts over.
//!
//! A bag's s_i and xi_i are one variable (its margin less rho) of a convex cost with a break
//! at 0; the ratio test passes such breaks while the objective still improves (Fourer's
//! piecewise-linear simplex, [`Simplex::mirror`]), where each would have taken two pivots:
//! on 3,000-bag masters 2.2 x fewer pivots, a quarter of the fit's time (docs/VARIANTS.md).
//!
//! min c'x  s.t.  A x = b,  lo <= x <= hi;  duals pi = c_B' B^-1 (`basis_inverse`).
//!
//! LPBoost's masters are heavily degenerate (hypotheses of outputs +-1 tie many bags'
//! margins): a run of pivots of step zero shifts the bounds of the basic columns outward
//! by random amounts of about 1e-9, which breaks the ties, and the true bounds return at
//! the optimum (the basis stays optimal: reduced costs do not depend on bounds).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::mil::lp::basis_inverse::BasisInverse;
use crate::mil::lp::dense_rows::DenseRows;

/// Why a solve gave up; the caller falls back to the interior-point solver for that round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimplexError {
    /// The basis matrix is (numerically) singular.
    Singular,
    /// An entering column has no blocking row.
    Unbounded,
    /// A basic value left its bounds (after a refactorisation or a deletion).
    Infeasible,
    /// No optimum within the pivot cap (cycling or stalling).
    IterationLimit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Basic,
    Lower,
    Upper,
    /// A free column at zero outside the basis.
    Free,
}

#[derive(Debug, Clone)]
struct Column {
    entries: Vec<(usize, f64)>,
    cost: f64,
    lo: f64,
    hi: f64,
    /// The true bounds while (lo, hi) are shifted against degeneracy (within a solve).
    unshifted: Option<(f64, f64)>,
    /// The column of negated entries it pairs with (see [`Simplex::mirror`]).
    mirror: Option<usize>,
}

/// Reduced costs below this are optimal.
const OPT_TOL: f64 = 1e-9;
/// Entries of a pivot column below this are not pivots.
const PIVOT_TOL: f64 = 1e-9;
/// Bound violations up to this are rounding.
const FEAS_TOL: f64 = 1e-8;
/// Pivots between two refactorisations of the basis inverse, at least; more where B^-1 has
/// more dense columns (see `refactor_every`). A refactorisation costs about k pivots for k
/// dense basic columns (53 on average on a 300-bag, 10-class fit), so every 50 pivots it
/// was 11 % of that fit; every 100, 22 series sets fit in 24 % less time over three seeds at
/// the same accuracy (0.8685 against 0.8674; docs/VARIANTS.md).
const REFACTOR_EVERY: usize = 100;
/// Degenerate pivots in a row before the basic columns' bounds are shifted (and, once
/// every basic column's are, before Bland's rule takes over: it cannot cycle).
const DEGENERATE_RUN: usize = 20;
/// The bound shifts against degeneracy: (1 + |bound|) times this, times 1 to 2 at random.
/// Far above rounding, far below the solution's scale and FEAS_TOL once unshifted. On a
/// 4,000-bag master whose solves stalled under Bland's rule (150,000 pivots, then the
/// interior point), a solve takes a few thousand pivots (docs/VARIANTS.md).
const BOUND_SHIFT: f64 = 1e-9;

/// An LP in equality form whose basis survives between solves.
#[derive(Debug, Clone)]
pub struct Simplex {
    rows: usize,
    b: Vec<f64>,
    cols: Vec<Column>,
    state: Vec<State>,
    x: Vec<f64>,
    /// `head[p]`: the column basic at position p.
    head: Vec<usize>,
    inv: BasisInverse,
    since_refactor: usize,
    /// Pivots until the next refactorisation: REFACTOR_EVERY, or the dense columns of B^-1
    /// right after the last one where more. A refactorisation costs about as many pivots as
    /// B^-1 has dense columns, so it stays about as much work as the pivots between (a
    /// 4,000-bag master's B^-1 has a few hundred: every 100 pivots, refactorisations were
    /// 31 % of the fit; with this the fit takes 18 % less time; docs/VARIANTS.md).
    refactor_every: usize,
    /// Update the duals pivot by pivot instead of recomputing them (see [`Self::solve`]).
    incremental_duals: bool,
    /// The dense columns again, by row, for pricing.
    dense: DenseRows,
    /// Draws the bound shifts: the same on every run.
    shifts: ChaCha8Rng,
    /// Basic columns handed on to their mirrors by the ratio test (see [`Simplex::mirror`]).
    breaks_passed: usize,
}

impl Simplex {
    /// An LP with right-hand side `b` and no columns yet.
    pub fn new(b: Vec<f64>) -> Self {
        let rows = b.len();
        Self {
            rows,
            b,
            cols: Vec::new(),
            state: Vec::new(),
            x: Vec::new(),
            head: Vec::new(),
            inv: BasisInverse::default(),
            since_refactor: 0,
            refactor_every: REFACTOR_EVERY,
            incremental_duals: false,
            dense: DenseRows::new(rows),
            shifts: ChaCha8Rng::seed_from_u64(0),
            breaks_passed: 0,
        }
    }

    /// Duals updated by each pivot, pi += (d_q / alpha_pq) e_p'B^-1 (a row of B^-1, m
    /// reads), and recomputed at each refactorisation, instead of c_B'B^-1 from scratch
    /// (costed basic columns x dense columns of B^-1) at every pivot: the large masters'
    /// choice, where the from-scratch duals were a third of the fit. Off, the pivots' bits
    /// are those of the recomputed duals.
    pub fn set_incremental_duals(&mut self, on: bool) {
        self.incremental_duals = on;
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn is_basic(&self, j: usize) -> bool {
        self.state[j] == State::Basic
    }

    /// Whether nonbasic column `j` sits at its upper bound.
    pub fn at_upper(&self, j: usize) -> bool {
        self.state[j] == State::Upper
    }

    /// Puts nonbasic column `j` at its (finite) upper bound, before [`Self::set_basis`].
    pub fn place_at_upper(&mut self, j: usize) {
        debug_assert!(self.cols[j].hi.is_finite() && self.state[j] != State::Basic);
        self.state[j] = State::Upper;
        self.x[j] = self.cols[j].hi;
    }

    pub fn n_cols(&self) -> usize {
        self.cols.len()
    }

    /// Adds a column nonbasic at its bound nearest zero (at zero if free); returns its
    /// index. A column at zero leaves the basic values as they are.
    pub fn add_column(&mut self, entries: Vec<(usize, f64)>, cost: f64, lo: f64, hi: f64) -> usize {
        debug_assert!(entries.iter().all(|&(r, _)| r < self.rows));
        let (state, value) = if lo.is_finite() {
            (State::Lower, lo)
        } else if hi.is_finite() {
            (State::Upper, hi)
        } else {
            (State::Free, 0.0)
        };
        if self.dense.wants(entries.len()) {
            self.dense.push(self.cols.len(), &entries);
        }
        self.cols.push(Column {
            entries,
            cost,
            lo,
            hi,
            unshifted: None,
            mirror: None,
        });
        self.state.push(state);
        self.x.push(value);
        self.cols.len() - 1
    }

    /// Pairs columns `a` and `b`, of negated entries, both in [0, inf), of costs summing to
    /// at least 0: together one variable a - b of a convex cost with a break at 0 (the
    /// master's s_i and xi_i: a bag's margin above rho costs nothing, below it cap_i a unit).
    /// The ratio test then passes a basic column reaching 0 on to its mirror while that
    /// still improves the objective, where two pivots would swap them (see `iterate`).
    pub fn mirror(&mut self, a: usize, b: usize) {
        let (ca, cb) = (&self.cols[a], &self.cols[b]);
        assert!(
            ca.entries.len() == cb.entries.len()
                && ca
                    .entries
                    .iter()
                    .zip(&cb.entries)
                    .all(|(x, y)| x.0 == y.0 && x.1 == -y.1),
            "mirrored columns have negated entries"
        );
        assert!(
            ca.lo == 0.0 && cb.lo == 0.0 && ca.hi == f64::INFINITY && cb.hi == f64::INFINITY,
            "mirrored columns lie in [0, inf)"
        );
        assert!(ca.cost + cb.cost >= 0.0, "a mirrored pair's cost is convex");
        self.cols[a].mirror = Some(b);
        self.cols[b].mirror = Some(a);
    }

    /// Makes `head` (one column per row) the basis, every other column nonbasic where it
    /// is, and computes the basic values; they must lie within their bounds.
    pub fn set_basis(&mut self, head: Vec<usize>) -> Result<(), SimplexError> {
        assert_eq!(head.len(), self.rows, "a basis has one column per row");
        for s in &mut self.state {
            if *s == State::Basic {
                *s = State::Lower;
            }
        }
        for &j in &head {
            self.state[j] = State::Basic;
        }
        // Columns that just left the basis sit at a bound.
        for j in 0..self.cols.len() {
            if self.state[j] == State::Lower {
                let c = &self.cols[j];
                (self.state[j], self.x[j]) = if c.lo.is_finite() {
                    (State::Lower, c.lo)
                } else if c.hi.is_finite() {
                    (State::Upper, c.hi)
                } else {
                    (State::Free, 0.0)
                };
            }
        }
        self.head = head;
        self.refactor()?;
        self.check_feasible()
    }

    /// The value of every column.
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// c'x.
    pub fn objective(&self) -> f64 {
        self.cols.iter().zip(&self.x).map(|(c, v)| c.cost * v).sum()
    }

    /// The row duals pi = c_B' B^-1.
    pub fn duals(&self) -> Vec<f64> {
        let cost_at: Vec<f64> = self.head.iter().map(|&j| self.cols[j].cost).collect();
        self.inv.left_times(&cost_at)
    }

    /// Columns of B^-1 with more than one entry (the cost of a pivot is m times these).
    pub fn dense_inverse_columns(&self) -> usize {
        self.inv.dense_columns()
    }

    /// c_j - pi'a_j of every column (0 for the basic ones).
    pub fn reduced_costs(&self) -> Vec<f64> {
        let pi = self.duals();
        self.cols
            .iter()
            .map(|c| c.cost - c.entries.iter().map(|&(r, v)| pi[r] * v).sum::<f64>())
            .collect()
    }

    /// Whether the optimal duals are unique: no dual pivot that leaves the primal point as
    /// it is (a basic column at its bound leaving the basis at it) moves them by a positive
    /// step. Where they are not, this vertex is one of many optimal duals, and the
    /// interior-point solver's lies inside their face.
    pub fn duals_unique(&self) -> bool {
        let m = self.rows;
        let reduced = self.reduced_costs();
        for p in 0..m {
            let j = self.head[p];
            let c = &self.cols[j];
            let x = self.x[j];
            // theta >= 0 leaves at the lower bound, theta <= 0 at the upper.
            let sign = if c.lo.is_finite() && (x - c.lo).abs() <= FEAS_TOL {
                1.0
            } else if c.hi.is_finite() && (c.hi - x).abs() <= FEAS_TOL {
                -1.0
            } else {
                continue;
            };
            let row = self.inv.row(p);
            // d_k(theta) = d_k + theta alpha_pk of each nonbasic k must keep its sign.
            let mut t = f64::INFINITY;
            for (k, ck) in self.cols.iter().enumerate() {
                let st = self.state[k];
                if st == State::Basic || ck.hi <= ck.lo {
                    continue;
                }
                let a = sign * ck.entries.iter().map(|&(r, v)| row[r] * v).sum::<f64>();
                if a.abs() <= PIVOT_TOL {
                    continue;
                }
                let dk = reduced[k];
                let limit = match st {
                    State::Lower if a < 0.0 => dk.max(0.0) / -a,
                    State::Upper if a > 0.0 => (-dk).max(0.0) / a,
                    State::Free => 0.0,
                    _ => continue,
                };
                t = t.min(limit);
            }
            if t > OPT_TOL {
                return false;
            }
        }
        true
    }

    /// Removes the columns whose flag in `keep` is false; the others keep their order. A
    /// removed basic column (at its bound, as an idle one is) is first pivoted out for a
    /// kept nonbasic column, a pivot of step zero.
    pub fn retain_columns(&mut self, keep: &[bool]) -> Result<(), SimplexError> {
        assert_eq!(keep.len(), self.cols.len(), "one flag per column");
        let pivots_before = self.since_refactor; // `pivot` counts itself
        for p in 0..self.rows {
            if keep[self.head[p]] {
                continue;
            }
            let row = self.inv.row(p);
            let mut best: Option<(usize, f64)> = None;
            for (j, c) in self.cols.iter().enumerate() {
                if self.state[j] == State::Basic || !keep[j] {
                    continue;
                }
                let a: f64 = c.entries.iter().map(|&(r, v)| row[r] * v).sum();
                if best.is_none_or(|(_, b)| a.abs() > b.abs()) {
                    best = Some((j, a));
                }
            }
            match best {
                Some((q, a)) if a.abs() > PIVOT_TOL => {
                    let alpha = self.ftran(q);
                    let leaving = self.head[p];
                    self.pivot(p, q, &alpha);
                    let c = &self.cols[leaving];
                    (self.state[leaving], self.x[leaving]) = if c.lo.is_finite() {
                        (State::Lower, c.lo)
                    } else {
                        (State::Free, 0.0)
                    };
                }
                _ => return Err(SimplexError::Singular),
            }
        }
        let mut new_index = vec![usize::MAX; self.cols.len()];
        let mut n = 0;
        for (j, &k) in keep.iter().enumerate() {
            if k {
                new_index[j] = n;
                n += 1;
            }
        }
        let mut k = keep.iter();
        self.cols
            .retain(|_| *k.next().expect("one flag per column"));
        let mut k = keep.iter();
        self.state
            .retain(|_| *k.next().expect("one flag per column"));
        let mut k = keep.iter();
        self.x.retain(|_| *k.next().expect("one flag per column"));
        self.head.iter_mut().for_each(|j| *j = new_index[*j]);
        for c in &mut self.cols {
            c.mirror = c.mirror.map(|j| new_index[j]).filter(|&j| j != usize::MAX);
        }
        self.dense.retain(&new_index);
        // Deleting nonbasic columns leaves the basis, B^-1 and x_B as they were (only
        // `head`'s indices move): refactorise only after pivoting a basic column out.
        if self.since_refactor != pivots_before {
            self.refactor()?;
        }
        self.check_feasible()
    }

    /// Primal simplex from the current (primal feasible) basis to an optimum; returns the
    /// number of pivots and bound flips.
    pub fn solve(&mut self, max_iter: usize) -> Result<usize, SimplexError> {
        let solved = self.iterate(max_iter);
        // (After an error the basic values may be stale; callers drop the simplex then.)
        if !self.unshift_bounds() {
            return solved;
        }
        // The true bounds move the nonbasic columns at a shifted bound by about 1e-9:
        // the basic values follow, within FEAS_TOL of their bounds.
        let pivots = solved?;
        self.refactor()?;
        self.check_feasible()?;
        Ok(pivots)
    }

    /// Shifts the finite bounds of the basic columns whose bounds are true outward by
    /// BOUND_SHIFT (relative) times 1 to 2 at random; whether any was.
    fn shift_basic_bounds(&mut self) -> bool {
        let mut any = false;
        for &j in &self.head {
            let c = &mut self.cols[j];
            if c.unshifted.is_some() || !(c.lo.is_finite() || c.hi.is_finite()) {
                continue;
            }
            c.unshifted = Some((c.lo, c.hi));
            c.lo -= BOUND_SHIFT * (1.0 + c.lo.abs()) * (1.0 + self.shifts.random::<f64>());
            c.hi += BOUND_SHIFT * (1.0 + c.hi.abs()) * (1.0 + self.shifts.random::<f64>());
            any = true;
        }
        any
    }

    /// The true bounds back, a nonbasic column at a shifted bound at its true one; whether
    /// any was shifted (the basic values are then stale: refactorise).
    fn unshift_bounds(&mut self) -> bool {
        let mut any = false;
        for (j, c) in self.cols.iter_mut().enumerate() {
            let Some((lo, hi)) = c.unshifted.take() else {
                continue;
            };
            (c.lo, c.hi) = (lo, hi);
            match self.state[j] {
                State::Lower => self.x[j] = lo,
                State::Upper => self.x[j] = hi,
                State::Basic | State::Free => {}
            }
            any = true;
        }
        any
    }

    /// The pivots of [`Self::solve`], on the bounds as they stand (shifted or true).
    // One piece on purpose (~200 lines): pricing, ratio test and update share the pivot's
    // state and read as the textbook's one loop.
    fn iterate(&mut self, max_iter: usize) -> Result<usize, SimplexError> {
        let m = self.rows;
        let mut degenerate = 0usize;
        let mut kept_pi: Option<Vec<f64>> = None;
        for iter in 0..max_iter {
            if self.since_refactor >= self.refactor_every {
                self.refactor()?;
                self.check_feasible()?;
                kept_pi = None;
            }
            if degenerate >= DEGENERATE_RUN && self.shift_basic_bounds() {
                degenerate = 0;
            }
            let bland = degenerate >= DEGENERATE_RUN;
            // Pricing: Dantzig's largest reduced cost, Bland's first eligible column when
            // pivots stall even with shifted bounds.
            let (pi, fresh) = match kept_pi.take() {
                Some(pi) => (pi, false),
                None => (self.duals(), true),
            };
            // The dense columns' pi'a_j at once (Bland's rule stops at the first eligible
            // column: it prices column by column).
            let products = if bland {
                Vec::new()
            } else {
                self.dense.products(&pi)
            };
            let mut entering: Option<(usize, f64)> = None;
            for (j, c) in self.cols.iter().enumerate() {
                let st = self.state[j];
                if st == State::Basic {
                    continue;
                }
                let product = match self.dense.slot(j) {
                    Some(k) if !bland => products[k],
                    _ => c.entries.iter().map(|&(r, v)| pi[r] * v).sum::<f64>(),
                };
                let d = c.cost - product;
                let eligible = match st {
                    State::Lower => d < -OPT_TOL && c.hi > c.lo,
                    State::Upper => d > OPT_TOL && c.hi > c.lo,
                    State::Free => d.abs() > OPT_TOL,
                    State::Basic => false,
                };
                if eligible {
                    if bland {
                        entering = Some((j, d));
                        break;
                    }
                    if entering.is_none_or(|(_, e)| d.abs() > e.abs()) {
                        entering = Some((j, d));
                    }
                }
            }
            let Some((q, dq)) = entering else {
                if !fresh {
                    continue; // optimal by updated duals: confirmed by recomputed ones
                }
                return Ok(iter);
            };
            // x_q moves by dir * t, x_B by -dir * t * alpha.
            let dir = if dq < 0.0 { 1.0 } else { -1.0 };
            let mut alpha = self.ftran(q);
            let cq = &self.cols[q];
            let mut step = cq.hi - cq.lo; // a bound flip
            let mut leave: Option<(usize, bool)> = None; // (position, leaves at upper)

            // A mirrored basic column falling to its lower bound is a break of the
            // objective's slope, not a stop (see `mirror`): (ratio, position, its mirror,
            // the pair's cost c + c').
            let mut breaks: Vec<(f64, usize, usize, f64)> = Vec::new();
            for p in 0..m {
                let delta = dir * alpha[p];
                if delta.abs() <= PIVOT_TOL {
                    continue;
                }
                let c = &self.cols[self.head[p]];
                let xb = self.x[self.head[p]];
                let (ratio, upper) = if delta > 0.0 {
                    if !c.lo.is_finite() {
                        continue;
                    }
                    let ratio = (xb - c.lo).max(0.0) / delta;
                    if let Some(mj) = c.mirror.filter(|_| !bland) {
                        breaks.push((ratio, p, mj, c.cost + self.cols[mj].cost));
                        continue;
                    }
                    (ratio, false)
                } else {
                    if !c.hi.is_finite() {
                        continue;
                    }
                    ((c.hi - xb).max(0.0) / -delta, true)
                };
                let better = match leave {
                    None => ratio < step,
                    Some((l, _)) if bland => {
                        ratio < step - 1e-12
                            || (ratio <= step + 1e-12 && self.head[p] < self.head[l])
                    }
                    Some((l, _)) => {
                        ratio < step - 1e-12
                            || (ratio <= step + 1e-12 && alpha[p].abs() > alpha[l].abs())
                    }
                };
                if better {
                    step = step.min(ratio);
                    leave = Some((p, upper));
                }
            }
            // Pass the breaks in order while the slope left still improves; the first
            // that would not is the column leaving (Fourer's piecewise-linear simplex).
            let mut passed: Vec<(usize, usize, f64)> = Vec::new(); // (position, mirror, c + c')
            breaks.retain(|b| b.0 < step);
            if !breaks.is_empty() {
                breaks.sort_unstable_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(alpha[b.1].abs().total_cmp(&alpha[a.1].abs()))
                        .then(a.1.cmp(&b.1))
                });
                let mut slope = dq.abs();
                for &(ratio, p, mj, both) in &breaks {
                    let lost = both * alpha[p].abs();
                    if slope - lost > OPT_TOL {
                        slope -= lost;
                        passed.push((p, mj, both));
                    } else {
                        step = ratio;
                        leave = Some((p, false));
                        break;
                    }
                }
            }
            if !step.is_finite() {
                return Err(SimplexError::Unbounded);
            }
            degenerate = if step <= 1e-12 { degenerate + 1 } else { 0 };
            self.x[q] += dir * step;
            for (&j, a) in self.head.iter().zip(&alpha) {
                self.x[j] -= dir * step * a;
            }
            // Each passed column hands its basis position to its mirror: B's column there
            // is negated, so B^-1's row p and alpha_p are; c_B there becomes the mirror's
            // cost (pi moves by -(c + c') row p, d_q by (c + c') alpha_p); the mirror takes
            // up what the column went below its bound.
            let mut pi = pi;
            let mut dq = dq;
            self.breaks_passed += passed.len();
            if self.incremental_duals && !passed.is_empty() {
                let costs: Vec<(usize, f64)> = passed.iter().map(|&(p, _, c)| (p, c)).collect();
                let shift = self.inv.left_times_sparse(&costs);
                pi.iter_mut().zip(&shift).for_each(|(v, r)| *v -= r);
            }
            for &(p, mj, both) in &passed {
                let j = self.head[p];
                dq += both * alpha[p];
                self.x[mj] += self.cols[j].lo - self.x[j];
                self.x[j] = self.cols[j].lo;
                self.state[j] = State::Lower;
                self.state[mj] = State::Basic;
                self.head[p] = mj;
                self.inv.negate_row(p);
                alpha[p] = -alpha[p];
            }
            if self.incremental_duals {
                // From the inverse before the pivot; a bound flip leaves the duals as they are.
                if let Some((p, _)) = leave {
                    let t = dq / alpha[p];
                    let row = self.inv.row(p);
                    pi.iter_mut().zip(&row).for_each(|(v, r)| *v += t * r);
                }
                kept_pi = Some(pi);
            }
            match leave {
                None => {
                    // The entering column reached its other bound; the basis stays.
                    self.state[q] = if dir > 0.0 {
                        State::Upper
                    } else {
                        State::Lower
                    };
                    let c = &self.cols[q];
                    self.x[q] = if dir > 0.0 { c.hi } else { c.lo };
                }
                Some((p, upper)) => {
                    let leaving = self.head[p];
                    let c = &self.cols[leaving];
                    (self.state[leaving], self.x[leaving]) = if upper {
                        (State::Upper, c.hi)
                    } else {
                        (State::Lower, c.lo)
                    };
                    self.pivot(p, q, &alpha);
                }
            }
        }
        Err(SimplexError::IterationLimit)
    }

    /// alpha = B^-1 a_q.
    fn ftran(&self, q: usize) -> Vec<f64> {
        self.inv.times(self.cols[q].entries.iter().copied())
    }

    /// Column q enters the basis at position p, whose B^-1 a_q is `alpha`.
    fn pivot(&mut self, p: usize, q: usize, alpha: &[f64]) {
        self.inv.update(p, alpha);
        self.state[q] = State::Basic;
        self.head[p] = q;
        self.since_refactor += 1;
    }

    /// Rebuilds B^-1 and the basic values, x_B = B^-1 (b - N x_N).
    fn refactor(&mut self) -> Result<(), SimplexError> {
        let basic: Vec<&[(usize, f64)]> = self
            .head
            .iter()
            .map(|&j| self.cols[j].entries.as_slice())
            .collect();
        self.inv = BasisInverse::factor(&basic).ok_or(SimplexError::Singular)?;
        self.since_refactor = 0;
        self.refactor_every = REFACTOR_EVERY.max(self.inv.dense_columns());
        let mut rhs = self.b.clone();
        for (j, c) in self.cols.iter().enumerate() {
            if self.state[j] != State::Basic && self.x[j] != 0.0 {
                for &(r, v) in &c.entries {
                    rhs[r] -= v * self.x[j];
                }
            }
        }
        let xb = self.inv.times(rhs.into_iter().enumerate());
        for (&j, v) in self.head.iter().zip(xb) {
            self.x[j] = v;
        }
        Ok(())
    }

    /// Basic values within their bounds (up to rounding, which is clipped).
    fn check_feasible(&mut self) -> Result<(), SimplexError> {
        for &j in &self.head {
            let c = &self.cols[j];
            let v = self.x[j];
            if v < c.lo - FEAS_TOL || v > c.hi + FEAS_TOL {
                return Err(SimplexError::Infeasible);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_variable_lp_with_slacks() {
        // min -x - y  s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0  ->  (1.6, 1.2), obj -2.8;
        // duals of the rows -0.4, -0.2.
        let mut lp = Simplex::new(vec![4.0, 6.0]);
        let x = lp.add_column(vec![(0, 1.0), (1, 3.0)], -1.0, 0.0, f64::INFINITY);
        let y = lp.add_column(vec![(0, 2.0), (1, 1.0)], -1.0, 0.0, f64::INFINITY);
        let s1 = lp.add_column(vec![(0, 1.0)], 0.0, 0.0, f64::INFINITY);
        let s2 = lp.add_column(vec![(1, 1.0)], 0.0, 0.0, f64::INFINITY);
        lp.set_basis(vec![s1, s2]).unwrap();
        lp.solve(100).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(lp.x()[x], 1.6) && close(lp.x()[y], 1.2),
            "{:?}",
            lp.x()
        );
        assert!(close(lp.objective(), -2.8));
        let pi = lp.duals();
        assert!(close(pi[0], -0.4) && close(pi[1], -0.2), "{pi:?}");
    }

    #[test]
    fn an_upper_bound_flips_and_a_new_column_warm_starts() {
        // min -x - y  s.t. x + y <= 3, x <= 1 (a bound), y <= 1.5 (a bound) -> 2.5 at (1, 1.5).
        let mut lp = Simplex::new(vec![3.0]);
        lp.add_column(vec![(0, 1.0)], -1.0, 0.0, 1.0);
        lp.add_column(vec![(0, 1.0)], -1.0, 0.0, 1.5);
        let s = lp.add_column(vec![(0, 1.0)], 0.0, 0.0, f64::INFINITY);
        lp.set_basis(vec![s]).unwrap();
        lp.solve(100).unwrap();
        assert!((lp.objective() + 2.5).abs() < 1e-12);
        // A third column z <= 4 at cost -2: the slack's 0.5 goes to it, then x and y give
        // way to it (-2 per unit against -1): z = 3, objective -6.
        let z = lp.add_column(vec![(0, 1.0)], -2.0, 0.0, 4.0);
        lp.solve(100).unwrap();
        assert!((lp.objective() + 6.0).abs() < 1e-12, "{}", lp.objective());
        assert!((lp.x()[z] - 3.0).abs() < 1e-12);
        // Removing x and y (nonbasic at zero) keeps the optimum and its basis.
        lp.retain_columns(&[false, false, true, true]).unwrap();
        assert_eq!(lp.solve(100), Ok(0));
        assert!((lp.objective() + 6.0).abs() < 1e-12, "{}", lp.objective());
        // Removing the basic z at zero pivots it out for the slack first.
        let mut lp = Simplex::new(vec![0.0]);
        let z = lp.add_column(vec![(0, 1.0)], 1.0, 0.0, 1.0);
        let s = lp.add_column(vec![(0, -1.0)], 0.0, 0.0, f64::INFINITY);
        lp.set_basis(vec![z]).unwrap();
        lp.retain_columns(&[false, true]).unwrap();
        assert_eq!(lp.x(), &[0.0][..]);
        assert_eq!(lp.solve(100), Ok(0));
        let _ = s;
    }

    #[test]
    fn an_unbounded_lp_is_an_error() {
        // min -x s.t. x - s = 0: nothing stops x.
        let mut lp = Simplex::new(vec![0.0]);
        lp.add_column(vec![(0, 1.0)], -1.0, 0.0, f64::INFINITY);
        let s = lp.add_column(vec![(0, -1.0)], 0.0, 0.0, f64::INFINITY);
        lp.set_basis(vec![s]).unwrap();
        assert_eq!(lp.solve(100), Err(SimplexError::Unbounded));
    }

    /// The primal (4)'s shape over m bags without hypotheses: s_i, xi_i at cost `cap`, rho,
    /// and u in [0, u_hi] (0: the paper's sum w = 1); returns the LP and u's column.
    fn master_shape(m: usize, cap: f64, u_hi: f64) -> (Simplex, usize) {
        let mut b = vec![0.0; m + 1];
        b[m] = 1.0;
        let mut lp = Simplex::new(b);
        for i in 0..m {
            lp.add_column(vec![(i, -1.0)], 0.0, 0.0, f64::INFINITY);
        }
        for i in 0..m {
            lp.add_column(vec![(i, 1.0)], cap, 0.0, f64::INFINITY);
        }
        lp.add_column(
            (0..m).map(|i| (i, -1.0)).collect(),
            -1.0,
            f64::NEG_INFINITY,
            f64::INFINITY,
        );
        let u = lp.add_column(vec![(m, 1.0)], 0.0, 0.0, u_hi);
        (lp, u)
    }

    /// B^-1 B = I after pivots that turn one-entry columns of B^-1 dense (a slack leaving)
    /// and after the refactorisation that rebuilds them, on a master LP of LPBoost's shape.
    #[test]
    fn the_inverse_by_column_stays_the_basis_inverse() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let m = 30;
        let (mut lp, u) = master_shape(m, 0.2, f64::INFINITY);
        let mut hypothesis = |lp: &mut Simplex| {
            let mut e: Vec<(usize, f64)> =
                (0..m).map(|i| (i, rng.random_range(-1.0..1.0))).collect();
            e.push((m, 1.0));
            lp.add_column(e, 0.0, 0.0, 0.25);
        };
        hypothesis(&mut lp);
        lp.set_basis((0..m).chain([u]).collect()).unwrap();
        let identity = |lp: &Simplex| {
            for p in 0..=m {
                let e = lp.inv.times(lp.cols[lp.head[p]].entries.iter().copied());
                for (i, v) in e.iter().enumerate() {
                    let want = if i == p { 1.0 } else { 0.0 };
                    assert!((v - want).abs() < 1e-9, "(B^-1 B)[{i}][{p}] = {v}");
                }
            }
        };
        let mut turned_dense = 0;
        for _ in 0..12 {
            for _ in 0..3 {
                hypothesis(&mut lp);
            }
            let dense = lp.dense_inverse_columns();
            lp.solve(1000).unwrap();
            turned_dense += lp.dense_inverse_columns().saturating_sub(dense);
            identity(&lp);
        }
        assert!(turned_dense > 0, "no slack left the basis");
        let bits = |lp: &Simplex| -> Vec<u64> {
            (0..=m)
                .flat_map(|p| lp.inv.row(p))
                .chain(lp.x.iter().copied())
                .map(f64::to_bits)
                .collect()
        };
        let before: Vec<f64> = (0..=m).flat_map(|p| lp.inv.row(p)).collect();
        lp.refactor().unwrap();
        identity(&lp);
        let rebuilt: Vec<f64> = (0..=m).flat_map(|p| lp.inv.row(p)).collect();
        assert!(before
            .iter()
            .zip(&rebuilt)
            .all(|(a, b)| (a - b).abs() < 1e-9));
        // Deleting nonbasic columns keeps B^-1 as it is (no refactorisation), and it is
        // still the basis's inverse.
        let nonbasic: Vec<usize> = (2 * m + 2..lp.n_cols())
            .filter(|&j| lp.state[j] != State::Basic)
            .collect();
        assert!(nonbasic.len() >= 2, "hypotheses left out of the basis");
        let keep: Vec<bool> = (0..lp.n_cols())
            .map(|j| !nonbasic[..2].contains(&j))
            .collect();
        let inverse = bits(&lp);
        lp.retain_columns(&keep).unwrap();
        assert_eq!(bits(&lp)[..(m + 1) * (m + 1)], inverse[..(m + 1) * (m + 1)]);
        identity(&lp);
    }

    /// A master whose s_i and xi_i are mirrored reaches the optimum of the one whose are
    /// not, through bases in which B^-1 stays B's inverse and A x = b holds, passing breaks.
    #[test]
    fn mirrored_slacks_pass_their_break_to_the_same_optimum() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let m = 120;
        let (mut plain, u) = master_shape(m, 0.05, f64::INFINITY);
        let mut paired = plain.clone();
        for i in 0..m {
            paired.mirror(i, m + i);
        }
        for lp in [&mut plain, &mut paired] {
            lp.set_basis((0..m).chain([u]).collect()).unwrap();
            lp.set_incremental_duals(true);
        }
        for _ in 0..10 {
            for _ in 0..5 {
                let mut e: Vec<(usize, f64)> = (0..m)
                    .map(|i| {
                        (
                            i,
                            rng.random_range(-1.0..1.0) + if i % 3 == 0 { 0.3 } else { 0.0 },
                        )
                    })
                    .collect();
                e.push((m, 1.0));
                plain.add_column(e.clone(), 0.0, 0.0, 0.25);
                paired.add_column(e, 0.0, 0.0, 0.25);
            }
            plain.solve(100_000).unwrap();
            paired.solve(100_000).unwrap();
            assert!(
                (plain.objective() - paired.objective()).abs() < 1e-9,
                "optima {} and {}",
                plain.objective(),
                paired.objective()
            );
            // A x = b, each pair has at most one basic column, B^-1 is B's inverse.
            let mut ax = vec![0.0; m + 1];
            for (c, x) in paired.cols.iter().zip(&paired.x) {
                c.entries.iter().for_each(|&(r, v)| ax[r] += v * x);
            }
            for (r, (a, b)) in ax.iter().zip(&paired.b).enumerate() {
                assert!((a - b).abs() < 1e-9, "row {r}: {a} against {b}");
            }
            for i in 0..m {
                assert!(
                    !(paired.is_basic(i) && paired.is_basic(m + i)),
                    "pair {i} both basic"
                );
            }
            for p in 0..=m {
                let e = paired
                    .inv
                    .times(paired.cols[paired.head[p]].entries.iter().copied());
                for (i, v) in e.iter().enumerate() {
                    let want = if i == p { 1.0 } else { 0.0 };
                    assert!((v - want).abs() < 1e-9, "(B^-1 B)[{i}][{p}] = {v}");
                }
            }
        }
        assert!(paired.breaks_passed > 0, "no break was passed");
        assert_eq!(plain.breaks_passed, 0, "a pass without a mirror");
    }

    /// A master of LPBoost's shape whose hypotheses output +-1 (bags' margins tie in
    /// blocks: degenerate vertices everywhere) is solved with shifted bounds, and each
    /// solve ends at an optimum of the true LP: every bound true again, every nonbasic
    /// column at a bound, the basic values within theirs, no reduced cost of the wrong sign.
    #[test]
    fn a_degenerate_master_solves_with_shifted_bounds_and_ends_on_the_true_ones() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let m = 200;
        let (mut lp, _) = master_shape(m, 0.02, 0.0);
        // Bags in blocks of ten share every output: a hypothesis is a sign per block.
        let mut hypothesis = |lp: &mut Simplex| {
            let signs: Vec<f64> = (0..m / 10)
                .map(|_| if rng.random_bool(0.6) { 1.0 } else { -1.0 })
                .collect();
            let mut e: Vec<(usize, f64)> = (0..m).map(|i| (i, signs[i / 10])).collect();
            e.push((m, 1.0));
            lp.add_column(e, 0.0, 0.0, f64::INFINITY)
        };
        let first = hypothesis(&mut lp);
        let head = (0..m)
            .map(|i| {
                if lp.cols[first].entries[i].1 > 0.0 {
                    i
                } else {
                    m + i
                }
            })
            .chain([first])
            .collect();
        lp.set_basis(head).unwrap();
        let mut shifted = false;
        for _ in 0..15 {
            for _ in 0..4 {
                hypothesis(&mut lp);
            }
            let mut probe = lp.clone();
            let _ = probe.iterate(100_000);
            shifted |= probe.cols.iter().any(|c| c.unshifted.is_some());
            lp.solve(100_000).unwrap();
            let reduced = lp.reduced_costs();
            for (j, c) in lp.cols.iter().enumerate() {
                assert!(c.unshifted.is_none(), "column {j} still shifted");
                let x = lp.x[j];
                match lp.state[j] {
                    State::Basic => assert!(x >= c.lo - FEAS_TOL && x <= c.hi + FEAS_TOL),
                    State::Lower => assert!(x == c.lo && reduced[j] >= -OPT_TOL),
                    State::Upper => assert!(x == c.hi && reduced[j] <= OPT_TOL),
                    State::Free => assert!(x == 0.0 && reduced[j].abs() <= OPT_TOL),
                }
            }
        }
        assert!(shifted, "no solve met a degenerate run");
    }
}
