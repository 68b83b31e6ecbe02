//! LPBoost's master LP kept in a simplex between rounds, over every bag or, on large sets,
//! over a working set of bags that grows and shrinks with the solution.
//!
//! The simplex's work per pivot is rows x dense basic columns (the hypothesis columns have
//! an entry in every bag's row), so over every bag a master of 4,000 bags took minutes a fit.
//! Most bags carry no weight at the optimum (their margin is above rho): rows kept only for
//! the bags that bind or are near to give the same optimum (the primal's rows generated as
//! the dual's columns are), at the cost of rebuilding the LP when the set changes.

use crate::mil::lp::simplex::{Simplex, SimplexError};

/// The solution of the restricted dual (5): sample weights d, edge bound gamma, and from its
/// multipliers the hypothesis weights w and the primal margin rho of problem (4).
#[derive(Debug, Clone)]
pub struct MasterSolution {
    pub d: Vec<f64>,
    pub gamma: f64,
    pub w: Vec<f64>,
    pub rho: f64,
    /// The dual price eta of the group cap (0 without one): a grouped hypothesis enters
    /// only with an edge above gamma + eta.
    pub eta: f64,
    /// The LP's optimal value: gamma, plus the caps' penalties when capped (unique where
    /// gamma, trading against the slacks, need not be).
    pub objective: f64,
}

/// Bag i's margin y_i sum_j w_j h_j(B_i) under the master's weights.
pub(crate) fn margin(y: &[f64], w: &[f64], outputs: &[Vec<f64>], i: usize) -> f64 {
    y[i] * w.iter().zip(outputs).map(|(w, h)| w * h[i]).sum::<f64>()
}

/// The primal (4) of Algorithm 1 kept in a simplex between rounds (the fit's master LP;
/// `lpboost::solve_master_capped` stays as the fallback and the reference):
/// max rho - sum_i cap_i xi_i  s.t.  y_i sum_j w_j h_j(B_i) + xi_i - s_i = rho (each bag),
/// sum_j w_j + u = 1, sum_{j in G} w_j + v = share, 0 <= w_j <= max_weight, xi, s, u, v >= 0
/// (u fixed at 0 without caps: the paper's sum w = 1). Each bag row brings its own
/// one-entry columns s_i and xi_i, one of which is basic, so a row costs little. The duals
/// are the dual (5)'s solution: d_i of the bag rows, gamma = -pi of the sum row, eta = -pi
/// of the group row. A bag without a row has d_i = 0; that is the full LP's optimum when its
/// margin is at least rho ([`WarmMaster::solve_rows`] adds the bags below).
#[derive(Debug, Clone)]
pub struct WarmMaster {
    lp: Simplex,
    /// The bags with a row, ascending: row r is bag `bags[r]`.
    bags: Vec<usize>,
    /// Every bag's cap on d_i.
    caps: Vec<f64>,
    capped: bool,
    max_weight: Option<f64>,
    group_share: Option<f64>,
    /// The master's hypothesis columns (after the logical ones), in the caller's order.
    columns: usize,
}

impl WarmMaster {
    /// Rows of the bags in the LP.
    fn m(&self) -> usize {
        self.bags.len()
    }

    /// Columns of the logical variables: s_i, xi_i, rho, u (and v with a group cap).
    fn logical(&self) -> usize {
        2 * self.m() + 2 + usize::from(self.group_share.is_some())
    }

    /// A master over the rows of `bags` (ascending; every bag, or a working set) and
    /// `outputs` (at least one column), started from a crash basis: every bag row's s_i
    /// basic with w = 0 when sum w <= 1 (u basic at 1), else the first column at weight 1
    /// with each bag row's s_i or xi_i basic by the sign of its margin.
    pub fn new_on(
        bags: Vec<usize>,
        y: &[f64],
        outputs: &[Vec<f64>],
        caps: &[f64],
        max_weight: Option<f64>,
        group: Option<(&[bool], f64)>,
    ) -> Result<Self, SimplexError> {
        let mut master = Self::empty(bags, y, outputs, caps, max_weight, group);
        let m = master.m();
        let u = 2 * m + 1;
        let head: Vec<usize> = if master.capped {
            (0..m).chain([u]).chain(group.map(|_| u + 1)).collect()
        } else {
            let first = master.logical();
            master
                .bags
                .iter()
                .enumerate()
                .map(|(r, &i)| {
                    if y[i] * outputs[0][i] >= 0.0 {
                        r
                    } else {
                        m + r
                    }
                })
                .chain([first])
                .collect()
        };
        master.lp.set_basis(head)?;
        master.lp.set_incremental_duals(master.bags.len() < y.len());
        Ok(master)
    }

    /// The LP over `bags` with every column nonbasic: s_i, xi_i, rho, u, v, then `outputs`.
    fn empty(
        bags: Vec<usize>,
        y: &[f64],
        outputs: &[Vec<f64>],
        caps: &[f64],
        max_weight: Option<f64>,
        group: Option<(&[bool], f64)>,
    ) -> Self {
        let m = bags.len();
        let capped = max_weight.is_some() || group.is_some();
        let mut b = vec![0.0; m + 1];
        b[m] = 1.0;
        if let Some((_, share)) = group {
            b.push(share);
        }
        let mut lp = Simplex::new(b);
        for r in 0..m {
            lp.add_column(vec![(r, -1.0)], 0.0, 0.0, f64::INFINITY);
        }
        for (r, &i) in bags.iter().enumerate() {
            let xi = lp.add_column(vec![(r, 1.0)], caps[i], 0.0, f64::INFINITY);
            lp.mirror(r, xi); // s_i - xi_i: a bag's margin less rho, of cost cap_i below 0
        }
        let rho = lp.add_column(
            (0..m).map(|r| (r, -1.0)).collect(),
            -1.0,
            f64::NEG_INFINITY,
            f64::INFINITY,
        );
        lp.add_column(
            vec![(m, 1.0)],
            0.0,
            0.0,
            if capped { f64::INFINITY } else { 0.0 },
        );
        if group.is_some() {
            lp.add_column(vec![(m + 1, 1.0)], 0.0, 0.0, f64::INFINITY);
        }
        debug_assert_eq!(rho, 2 * m);
        let mut master = Self {
            lp,
            bags,
            caps: caps.to_vec(),
            capped,
            max_weight,
            group_share: group.map(|g| g.1),
            columns: 0,
        };
        for (j, h) in outputs.iter().enumerate() {
            master.add_column(y, h, group.is_some_and(|(g, _)| g[j]));
        }
        master
    }

    /// Adds hypothesis h_j's column (weight 0, so the last basis stays feasible).
    pub fn add_column(&mut self, y: &[f64], h: &[f64], in_group: bool) {
        let m = self.m();
        let mut entries: Vec<(usize, f64)> = self
            .bags
            .iter()
            .enumerate()
            .map(|(r, &i)| (r, y[i] * h[i]))
            .filter(|e| e.1 != 0.0)
            .collect();
        entries.push((m, 1.0));
        if in_group && self.group_share.is_some() {
            entries.push((m + 1, 1.0));
        }
        let hi = self.max_weight.unwrap_or(f64::INFINITY);
        self.lp.add_column(entries, 0.0, 0.0, hi);
        self.columns += 1;
    }

    /// Whether the last solution's d, gamma and eta are the only optimal ones.
    pub fn duals_unique(&self) -> bool {
        self.lp.duals_unique()
    }

    /// Per hypothesis column: whether its edge reaches gamma (+ eta) at the last solution,
    /// so some optimal weights may use it (the interior point weighs every such column).
    pub fn tight_columns(&self) -> Vec<bool> {
        self.lp.reduced_costs()[self.logical()..]
            .iter()
            .map(|r| r.abs() <= 1e-9)
            .collect()
    }

    /// Keeps the hypothesis columns flagged in `keep` (column deletion).
    pub fn retain_columns(&mut self, keep: &[bool]) -> Result<(), SimplexError> {
        assert_eq!(keep.len(), self.columns, "one flag per hypothesis column");
        let mut all = vec![true; self.logical()];
        all.extend_from_slice(keep);
        self.lp.retain_columns(&all)?;
        self.columns = keep.iter().filter(|k| **k).count();
        Ok(())
    }

    /// Re-optimises from the last basis, over the bags with a row.
    pub fn solve(&mut self) -> Result<MasterSolution, SimplexError> {
        let m = self.m();
        let cap = 50 * (self.lp.n_cols() + m) + 1000;
        self.lp.solve(cap)?;
        let pi = self.lp.duals();
        let x = self.lp.x();
        // d over every bag: 0 for a bag without a row.
        let mut d = vec![0.0; self.caps.len()];
        for (&i, v) in self.bags.iter().zip(&pi[..m]) {
            d[i] = v.clamp(0.0, self.caps[i]);
        }
        let dsum: f64 = d.iter().sum();
        if dsum.is_nan() || dsum <= 0.0 {
            return Err(SimplexError::Infeasible);
        }
        let d = d.iter().map(|v| v / dsum).collect();
        let first = self.logical();
        let mut w: Vec<f64> = x[first..].iter().map(|v| v.max(0.0)).collect();
        let wsum: f64 = w.iter().sum();
        if wsum > 0.0 && !self.capped {
            w.iter_mut().for_each(|v| *v /= wsum);
        }
        Ok(MasterSolution {
            d,
            gamma: -pi[m],
            w,
            rho: x[2 * m],
            eta: if self.group_share.is_some() {
                -pi[m + 1]
            } else {
                0.0
            },
            objective: -self.lp.objective(),
        })
    }

    /// [`Self::solve`], then rows for the bags without one whose margin is below rho (at
    /// most `most` at a time, the smallest margins first), and again, until none is: the
    /// full LP's optimum. `outputs` and `grouped` are the master's columns (every bag's
    /// outputs). Joining a few thousand rows at once (the first round of a 4,000-bag set)
    /// stalled the simplex for minutes; a few hundred at a time it takes a second.
    pub fn solve_rows(
        &mut self,
        y: &[f64],
        outputs: &[Vec<f64>],
        grouped: &[bool],
        most: usize,
    ) -> Result<MasterSolution, SimplexError> {
        loop {
            let ms = self.solve()?;
            if self.bags.len() == y.len() {
                return Ok(ms);
            }
            let mut with_row = vec![false; y.len()];
            self.bags.iter().for_each(|&i| with_row[i] = true);
            let mut below: Vec<(f64, usize)> = (0..y.len())
                .filter(|&i| !with_row[i])
                .map(|i| (margin(y, &ms.w, outputs, i), i))
                .filter(|&(g, _)| g < ms.rho - 1e-9)
                .collect();
            if below.is_empty() {
                return Ok(ms);
            }
            below.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            below.truncate(most.max(1));
            let mut bags = self.bags.clone();
            bags.extend(below.into_iter().map(|(_, i)| i));
            bags.sort_unstable();
            self.rebuild(bags, y, outputs, grouped, &ms)?;
        }
    }

    /// Drops the rows of bags that neither bind nor are near to: once more than twice `keep`
    /// bags have their own s_i basic (margin above rho, no weight), all of them but the
    /// `keep` of smallest margin (the slack between the two saves a rebuild a round).
    pub fn shrink(
        &mut self,
        keep: usize,
        y: &[f64],
        outputs: &[Vec<f64>],
        grouped: &[bool],
        ms: &MasterSolution,
    ) -> Result<(), SimplexError> {
        let mut free: Vec<(f64, usize)> = (0..self.m())
            .filter(|&r| self.lp.is_basic(r) && ms.d[self.bags[r]] == 0.0)
            .map(|r| (margin(y, &ms.w, outputs, self.bags[r]), r))
            .collect();
        if free.len() <= 2 * keep {
            return Ok(());
        }
        free.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut dropped = vec![false; self.m()];
        free[keep..].iter().for_each(|&(_, r)| dropped[r] = true);
        let bags: Vec<usize> = (0..self.m())
            .filter(|&r| !dropped[r])
            .map(|r| self.bags[r])
            .collect();
        self.rebuild(bags, y, outputs, grouped, ms)
    }

    /// The LP over `bags` (ascending) from the last basis: a kept row keeps its basic slack
    /// (or its row is covered by the basic structural columns, which stay basic), a new
    /// row's s_i or xi_i is basic by the sign of its margin less rho, a dropped row had its
    /// own s_i basic; the hypothesis weights stay where they are. The same vertex over the
    /// old rows, feasible in the new ones.
    fn rebuild(
        &mut self,
        bags: Vec<usize>,
        y: &[f64],
        outputs: &[Vec<f64>],
        grouped: &[bool],
        ms: &MasterSolution,
    ) -> Result<(), SimplexError> {
        let group = self.group_share.map(|s| (grouped, s));
        let mut next = Self::empty(bags, y, outputs, &self.caps, self.max_weight, group);
        let (old_m, m) = (self.m(), next.m());
        let mut old_row = vec![usize::MAX; y.len()];
        self.bags
            .iter()
            .enumerate()
            .for_each(|(r, &i)| old_row[i] = r);
        let mut head = Vec::with_capacity(m + 2);
        for (r, &i) in next.bags.iter().enumerate() {
            match old_row[i] {
                usize::MAX if margin(y, &ms.w, outputs, i) >= ms.rho => head.push(r),
                usize::MAX => head.push(m + r),
                o if self.lp.is_basic(o) => head.push(r),
                o if self.lp.is_basic(old_m + o) => head.push(m + r),
                _ => {}
            }
        }
        // rho, u, v and the hypothesis columns, in order: old column j is new j - 2 (old_m - m).
        for j in 2 * old_m..self.lp.n_cols() {
            let k = j + 2 * m - 2 * old_m;
            if self.lp.is_basic(j) {
                head.push(k);
            } else if self.lp.at_upper(j) {
                next.lp.place_at_upper(k);
            }
        }
        if head.len() != next.lp.rows() {
            return Err(SimplexError::Singular);
        }
        next.lp.set_basis(head)?;
        next.lp.set_incremental_duals(true);
        *self = next;
        Ok(())
    }
}
