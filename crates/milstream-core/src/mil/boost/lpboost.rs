//! LPBoost by column generation (the paper, Algorithm 1; Demiriz et al., 2002).

use crate::mil::cancel::Cancel;
use crate::mil::error::{MilError, Result};
use crate::mil::lp::simplex::SimplexError;
use crate::mil::lp::solver::ConicProgram;
pub use crate::mil::lp::warm_master::MasterSolution;
use crate::mil::lp::warm_master::{margin, WarmMaster};

/// Stopping and soft-margin parameters of Algorithm 1.
#[derive(Debug, Clone, Copy)]
pub struct BoostParams {
    /// Soft-margin parameter nu in (0, 1]: caps every d_i at 1 / (nu m).
    pub nu: f64,
    /// Stop when the new hypothesis's edge is not above gamma + epsilon.
    pub epsilon: f64,
    pub max_rounds: usize,
    /// Class-balanced soft margin (beyond the paper): each class holds half the weight at
    /// the start and d_i <= 1 / (2 nu m_c) for a bag of a class of m_c bags, so nu bounds
    /// the share of margin errors within each class. One-vs-rest makes the positive class
    /// small (10 of 100 bags on ACSF1): with the paper's common cap 1 / (nu m) the LP may
    /// give up on every positive bag and still report a positive margin.
    pub balanced: bool,
    /// Caps every hypothesis weight at this (beyond the paper): the margin must then be
    /// carried by at least 1 / cap hypotheses. A threshold hypothesis that splits the
    /// training set alone reaches the largest margin there is, and boosting would stop with
    /// it; the cap makes the ensemble a vote of several. None: the paper's LP.
    pub max_weight: Option<f64>,
    /// Caps the summed weight of the grouped hypotheses (the threshold hypotheses) at this
    /// share of the vote (beyond the paper): the rest must come from the kernel
    /// hypotheses, whose margin grows with the similarity. None: no group cap.
    pub group_share: Option<f64>,
    /// Solve the master LP with the warm-started simplex ([`WarmMaster`]) rather than
    /// Clarabel from scratch each round: the same optimum in a fraction of the time. A
    /// round whose optimal d is not unique still goes to Clarabel (a vertex there weighs
    /// few bags, the interior point all of the optimal face's), and the final weights come
    /// from one Clarabel solve.
    pub warm_master: bool,
    /// Boosting stops with `MilError::Cancelled` once this token is cancelled (checked
    /// every round).
    pub cancel: Cancel,
}

/// The caps on d_i and the starting weights: the paper's 1 / (nu m) and 1 / m, or per class
/// (see [`BoostParams::balanced`]).
fn caps_and_start(y: &[f64], nu: f64, balanced: bool) -> (Vec<f64>, Vec<f64>) {
    let m = y.len() as f64;
    let pos = y.iter().filter(|&&v| v > 0.0).count() as f64;
    let neg = m - pos;
    if !balanced || pos == 0.0 || neg == 0.0 {
        return (vec![1.0 / (nu * m); y.len()], vec![1.0 / m; y.len()]);
    }
    let size = |v: f64| if v > 0.0 { pos } else { neg };
    (
        y.iter().map(|&v| 1.0 / (2.0 * nu * size(v))).collect(),
        y.iter().map(|&v| 1.0 / (2.0 * size(v))).collect(),
    )
}

/// Solves the master LP of Algorithm 1:
/// min gamma  s.t.  sum_i y_i d_i h_j(B_i) <= gamma (each j),  0 <= d_i <= 1/(nu m),  sum d = 1.
/// `outputs[j][i]` is h_j(B_i). w_j is the multiplier of row j (the paper: "w <- Lagrangian
/// multipliers of the last solution"); rho is the negated multiplier of sum d = 1.
pub fn solve_master(y: &[f64], outputs: &[Vec<f64>], nu: f64) -> Result<MasterSolution> {
    solve_master_capped(
        y,
        outputs,
        &vec![1.0 / (nu * y.len() as f64); y.len()],
        None,
        None,
    )
}

/// [`solve_master`] with a cap of its own on each d_i, and optionally a cap c on each w_j
/// ([`BoostParams::max_weight`]): the primal gains w_j <= c (and sum w <= 1, feasible in
/// every round), the dual gamma >= 0 and a slack beta_j >= 0 per row at cost c:
/// min gamma + c sum beta  s.t.  sum_i y_i d_i h_j(B_i) <= gamma + beta_j.
/// With a group cap s on the summed weight of the rows flagged in `group`
/// ([`BoostParams::group_share`]), a price eta >= 0 at cost s joins those rows' right sides.
pub fn solve_master_capped(
    y: &[f64],
    outputs: &[Vec<f64>],
    caps: &[f64],
    max_weight: Option<f64>,
    group: Option<(&[bool], f64)>,
) -> Result<MasterSolution> {
    let m = y.len();
    let t = outputs.len();
    let gamma = m; // index of gamma among the variables; the betas follow, then eta
    let betas = if max_weight.is_some() { t } else { 0 };
    let eta = gamma + 1 + betas;
    let n = eta + usize::from(group.is_some());
    let mut p = ConicProgram::new(n);
    let mut q = vec![0.0; n];
    q[gamma] = 1.0;
    q[gamma + 1..gamma + 1 + betas]
        .iter_mut()
        .for_each(|v| *v = max_weight.unwrap_or(0.0));
    if let Some((_, share)) = group {
        q[eta] = share;
    }
    p.set_objective(q);
    p.add_eq((0..m).map(|i| (i, 1.0)).collect(), 1.0);
    for (j, h) in outputs.iter().enumerate() {
        let mut row: Vec<(usize, f64)> = (0..m).map(|i| (i, y[i] * h[i])).collect();
        row.push((gamma, -1.0));
        if betas > 0 {
            row.push((gamma + 1 + j, -1.0));
        }
        if group.is_some_and(|(g, _)| g[j]) {
            row.push((eta, -1.0));
        }
        p.add_le(row, 0.0);
    }
    if max_weight.is_some() || group.is_some() {
        // gamma >= 0 (sum w <= 1), betas >= 0, eta >= 0.
        for v in gamma..n {
            p.add_le(vec![(v, -1.0)], 0.0);
        }
    }
    for (i, &cap) in caps.iter().enumerate() {
        p.add_le(vec![(i, -1.0)], 0.0);
        p.add_le(vec![(i, 1.0)], cap);
    }
    let sol = p.solve(&format!("LPBoost master LP (round {t}, {m} bags)"))?;
    let d: Vec<f64> = sol.x[..m]
        .iter()
        .zip(caps)
        .map(|(v, &cap)| v.clamp(0.0, cap))
        .collect();
    let dsum: f64 = d.iter().sum();
    let d = d.iter().map(|v| v / dsum).collect();
    let mut w: Vec<f64> = sol.le_duals[..t].iter().map(|v| v.max(0.0)).collect();
    let wsum: f64 = w.iter().sum();
    // Capped, sum w <= 1 holds with equality once the margin is positive; the multipliers
    // are kept as they are, so the rows' solver noise does not rescale one class's g.
    if wsum > 0.0 && max_weight.is_none() && group.is_none() {
        w.iter_mut().for_each(|v| *v /= wsum);
    }
    Ok(MasterSolution {
        d,
        gamma: sol.x[gamma],
        w,
        rho: -sol.eq_duals[0],
        eta: if group.is_some() { sol.x[eta] } else { 0.0 },
        objective: sol.objective,
    })
}

/// One accepted hypothesis: its payload, its outputs h(B_i) on the training bags.
#[derive(Debug, Clone)]
pub struct Boosted<H> {
    pub hypotheses: Vec<(H, Vec<f64>)>,
    pub weights: Vec<f64>,
    pub gamma: f64,
    pub rho: f64,
    pub rounds: usize,
    pub stop_reason: String,
    /// Rounds whose master the warm-started simplex gave up on (Clarabel solved them).
    pub master_fallbacks: usize,
    /// Rounds of the warm master whose optimal d was not unique (Clarabel solved them).
    pub interior_rounds: usize,
}

impl<H> Boosted<H> {
    /// No hypothesis: what a problem with no positive edge anywhere fits (g = 0).
    pub fn empty(stop_reason: String) -> Self {
        Self {
            hypotheses: Vec::new(),
            weights: Vec::new(),
            gamma: 0.0,
            rho: 0.0,
            rounds: 0,
            stop_reason,
            master_fallbacks: 0,
            interior_rounds: 0,
        }
    }
}

/// The master LP over a working set of bags (constraint generation in the primal, whose
/// rows are the bags' margins). A bag left out has d_i = 0; the restricted optimum is the
/// full one when every bag left out has a margin of at least rho under the restricted w
/// (then its xi_i = 0 and both objectives agree); bags below join and the LP is solved again.
/// `start` flags the first working set. Returns the solution over all bags and the final set.
pub fn solve_master_on_bags(
    y: &[f64],
    outputs: &[Vec<f64>],
    caps: &[f64],
    max_weight: Option<f64>,
    group: Option<(&[bool], f64)>,
    start: &[bool],
) -> Result<(MasterSolution, Vec<bool>)> {
    let m = y.len();
    let mut work = start.to_vec();
    // sum d = 1 with d_i <= cap_i needs caps summing to 1 at least: fill up in bag order.
    let mut room: f64 = (0..m).filter(|&i| work[i]).map(|i| caps[i]).sum();
    for i in 0..m {
        if room >= 1.0 + 1e-9 {
            break;
        }
        if !work[i] {
            work[i] = true;
            room += caps[i];
        }
    }
    loop {
        let idx: Vec<usize> = (0..m).filter(|&i| work[i]).collect();
        if idx.len() == m {
            return Ok((
                solve_master_capped(y, outputs, caps, max_weight, group)?,
                work,
            ));
        }
        let pick = |v: &[f64]| -> Vec<f64> { idx.iter().map(|&i| v[i]).collect() };
        let outs: Vec<Vec<f64>> = outputs.iter().map(|h| pick(h)).collect();
        let sub = solve_master_capped(&pick(y), &outs, &pick(caps), max_weight, group)?;
        let mut joined = false;
        for (i, w) in work.iter_mut().enumerate().filter(|(_, w)| !**w) {
            if margin(y, &sub.w, outputs, i) < sub.rho - 1e-9 {
                *w = true;
                joined = true;
            }
        }
        if !joined {
            let mut d = vec![0.0; m];
            idx.iter().zip(&sub.d).for_each(|(&i, &v)| d[i] = v);
            return Ok((MasterSolution { d, ..sub }, work));
        }
    }
}

/// The next round's working set: the bags with weight and the quarter of the bags of
/// smallest margin (the new columns move margins; those near rho are the likely to bind).
fn next_working_set(y: &[f64], outputs: &[Vec<f64>], ms: &MasterSolution) -> Vec<bool> {
    let m = y.len();
    let margins: Vec<f64> = (0..m).map(|i| margin(y, &ms.w, outputs, i)).collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| margins[a].total_cmp(&margins[b]));
    let mut work: Vec<bool> = ms.d.iter().map(|&v| v > 1e-12).collect();
    order
        .iter()
        .take(m.div_ceil(4))
        .for_each(|&i| work[i] = true);
    work
}

/// Solves a column may sit at weight 0 before it leaves the master LP.
const IDLE_ROUNDS: usize = 5;

/// Keeps the entries of `v` whose flag in `keep` is set.
fn retain_flagged<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut k = keep.iter();
    v.retain(|_| *k.next().expect("one flag per entry"));
}

/// Past this many bags the warm-started master keeps rows for a working set of bags only
/// (`warm_master`): the simplex's pivots cost rows x dense basic columns, and over every
/// bag of a 4,000-bag set a fit took minutes.
pub const WARM_MASTER_MAX_BAGS: usize = 1_000;

/// Rows kept for bags of no weight between rounds, as a share of the bags: those of
/// smallest margin, the likely to bind once the round's columns join.
const SPARE_ROWS_SHARE: f64 = 0.1;

/// Rows for bags of no weight kept between rounds, and bags joining at once.
fn spare_rows(m: usize) -> usize {
    (SPARE_ROWS_SHARE * m as f64) as usize
}

/// The first round's working set over many bags: the `spare` of smallest margin under equal
/// weights on the round's columns, and more in that order until the caps on d sum to 1
/// (sum d = 1 must be feasible). Bags below rho join as the master is solved.
fn first_rows(y: &[f64], outputs: &[Vec<f64>], caps: &[f64], spare: usize) -> Vec<usize> {
    let m = y.len();
    let margins: Vec<f64> = (0..m)
        .map(|i| y[i] * outputs.iter().map(|h| h[i]).sum::<f64>())
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| margins[a].total_cmp(&margins[b]).then(a.cmp(&b)));
    let mut room = 0.0;
    let mut take = 0;
    for &i in &order {
        if take >= spare && room >= 1.0 + 1e-9 {
            break;
        }
        room += caps[i];
        take += 1;
    }
    let mut bags = order[..take].to_vec();
    bags.sort_unstable();
    bags
}

/// Algorithm 1. `weak(d, gamma, eta)` returns hypotheses, best first, each with its outputs on the
/// training bags and whether it belongs to the capped group (whose edges count less eta, the
/// group's price; 0 without a group cap). Those with an edge above gamma join in one round.
/// `weak` also sees the master's columns: with `max_weight` it must not offer one of them
/// again, since a copy would carry a cap of its own. A weak learner or master LP that fails
/// after the first round ends boosting with the ensemble built so far (the reason is kept);
/// failing in the first round is an error.
pub fn lpboost<H>(
    y: &[f64],
    params: BoostParams,
    mut weak: impl FnMut(&[f64], f64, f64, &[H]) -> Result<Vec<(H, Vec<f64>, bool)>>,
) -> Result<Boosted<H>> {
    if !(params.nu > 0.0 && params.nu <= 1.0) {
        return Err(MilError::InvalidParameter(format!(
            "nu must be in (0, 1], got {}",
            params.nu
        )));
    }
    let (caps, mut d) = caps_and_start(y, params.nu, params.balanced);
    let mut master = Master::new(y, caps, params);
    let (mut gamma, mut eta) = (0.0, 0.0);
    let mut solution: Option<MasterSolution> = None;
    let mut stop_reason = format!("reached the round limit ({})", params.max_rounds);
    let mut rounds = 0;
    for round in 0..params.max_rounds {
        params.cancel.check()?;
        let found = match weak(&d, gamma, eta, &master.hyps) {
            Ok(x) => x,
            Err(e) if round > 0 => {
                stop_reason = format!("weak learner failed in round {}: {e}", round + 1);
                break;
            }
            Err(e) => return Err(e),
        };
        let before = master.hyps.len();
        if let Some(edge) = master.add_columns(found, &d, gamma, eta) {
            stop_reason = format!(
                "edge {edge:.6} of round {} is not above gamma {gamma:.6} + epsilon",
                round + 1
            );
        }
        if master.hyps.len() == before {
            break;
        }
        rounds += 1;
        match master.solve(rounds, before) {
            Ok((mut ms, tight)) => {
                d.clone_from(&ms.d);
                gamma = ms.gamma;
                eta = ms.eta;
                master.delete_idle(&mut ms, tight);
                solution = Some(ms);
            }
            Err(e) if solution.is_some() => {
                master.truncate(before);
                stop_reason = format!("master LP failed in round {}: {e}", round + 1);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let solution = solution.ok_or_else(|| {
        MilError::Training(format!(
            "no hypothesis has a positive edge on this data ({stop_reason}); \
             check that the classes differ, or try another kernel width or shapelet length"
        ))
    })?;
    let solution = master.central(solution);
    Ok(Boosted {
        hypotheses: master.hyps.into_iter().zip(master.outs).collect(),
        weights: solution.w,
        gamma: solution.gamma,
        rho: solution.rho,
        rounds,
        stop_reason,
        master_fallbacks: master.fallbacks,
        interior_rounds: master.interior_rounds,
    })
}

/// The master LP's side of Algorithm 1 across rounds: its columns (hypotheses, their
/// outputs on the training bags, whether each is in the share-capped group, how many solves
/// each has gone without weight), the working set of bags, and the warm-started simplex.
struct Master<'y, H> {
    y: &'y [f64],
    caps: Vec<f64>,
    params: BoostParams,
    hyps: Vec<H>,
    outs: Vec<Vec<f64>>,
    grouped: Vec<bool>,
    idle: Vec<usize>,
    /// Bags in the master LP's working set (all, until a solution says which bind).
    work: Vec<bool>,
    /// More bags than the warm master solves over at once: it works on row sets.
    row_sets: bool,
    warm: Option<WarmMaster>,
    /// Rounds whose warm master failed (Clarabel solved them).
    fallbacks: usize,
    /// Rounds whose optimal d was not unique (Clarabel solved them).
    interior_rounds: usize,
}

impl<'y, H> Master<'y, H> {
    fn new(y: &'y [f64], caps: Vec<f64>, params: BoostParams) -> Self {
        let m = y.len();
        Self {
            y,
            caps,
            params,
            hyps: Vec::new(),
            outs: Vec::new(),
            grouped: Vec::new(),
            idle: Vec::new(),
            work: vec![true; m],
            row_sets: m > WARM_MASTER_MAX_BAGS,
            warm: None,
            fallbacks: 0,
            interior_rounds: 0,
        }
    }

    /// Adds the weak learner's columns whose edge at `d` is above gamma + epsilon. Column
    /// generation may add every violated column at once; the master's optimum is the same,
    /// it is reached in fewer solves. The first is the weak learner's best and decides when
    /// boosting stops: returns its edge when it is not added.
    fn add_columns(
        &mut self,
        found: Vec<(H, Vec<f64>, bool)>,
        d: &[f64],
        gamma: f64,
        eta: f64,
    ) -> Option<f64> {
        let y = self.y;
        let mut first_rejected = None;
        for (k, (h, out, in_group)) in found.into_iter().enumerate() {
            let mut edge: f64 = (0..y.len()).map(|i| y[i] * d[i] * out[i]).sum();
            if in_group {
                edge -= eta;
            }
            if edge <= gamma + self.params.epsilon {
                if k == 0 {
                    first_rejected = Some(edge);
                }
                continue;
            }
            self.hyps.push(h);
            self.outs.push(out);
            self.grouped.push(in_group);
        }
        first_rejected
    }

    /// Solves the master over the columns (those from `before` on are new), with which
    /// columns are tight at the simplex's vertex when it solved it.
    fn solve(
        &mut self,
        rounds: usize,
        before: usize,
    ) -> Result<(MasterSolution, Option<Vec<bool>>)> {
        let (y, m) = (self.y, self.y.len());
        let params = self.params;
        let group = params.group_share.map(|s| (self.grouped.as_slice(), s));
        // The simplex re-optimises from the last round's basis; should it fail (singular,
        // stalled), Clarabel solves this round and the next builds a fresh simplex.
        let warm_solution = match self.warm.as_mut() {
            _ if !params.warm_master => Err(SimplexError::Singular),
            Some(wm) => {
                for (out, &g) in self.outs[before..].iter().zip(&self.grouped[before..]) {
                    wm.add_column(y, out, g);
                }
                wm.solve_rows(y, &self.outs, &self.grouped, spare_rows(m))
            }
            None => {
                let bags = match (self.row_sets, rounds) {
                    (false, _) => (0..m).collect(),
                    (true, 1) => first_rows(y, &self.outs, &self.caps, spare_rows(m)),
                    (true, _) => (0..m).filter(|&i| self.work[i]).collect(),
                };
                let (outs, grouped) = (&self.outs, &self.grouped);
                WarmMaster::new_on(bags, y, outs, &self.caps, params.max_weight, group).and_then(
                    |mut wm| {
                        let s = wm.solve_rows(y, outs, grouped, spare_rows(m));
                        self.warm = Some(wm);
                        s
                    },
                )
            }
        };
        // Where the optimal d is not unique (degenerate rounds, a zero optimum), the
        // simplex's vertex weighs few bags and boosting would take another path than the
        // interior point's d, inside the optimal face: Clarabel solves those rounds. Where
        // it is unique, both give the same d, gamma and eta.
        let interior = |work: &[bool]| {
            solve_master_on_bags(y, &self.outs, &self.caps, params.max_weight, group, work)
                .map(|(ms, _)| (ms, None))
        };
        match warm_solution {
            Ok(ms) if self.warm.as_ref().is_some_and(|wm| wm.duals_unique()) => {
                Ok((ms, self.warm.as_ref().map(WarmMaster::tight_columns)))
            }
            Ok(_) => {
                self.interior_rounds += 1;
                interior(&self.work)
            }
            Err(_) => {
                self.warm = None;
                self.fallbacks += usize::from(params.warm_master);
                interior(&self.work)
            }
        }
    }

    /// Column deletion: a column with no weight for IDLE_ROUNDS solves in a row leaves the
    /// master. Its row is not binding in the dual, so the optimum is unchanged; if it is
    /// violated again the weak learner finds it again. Keeps the LP, whose solves dominate
    /// long fits, at the size of the live ensemble. While the optimum is still zero (w = 0
    /// is a solution: no margin yet), a vertex weighs nothing and no column counts as idle;
    /// they all stay until together they carry a margin. Then the next working set of bags.
    fn delete_idle(&mut self, ms: &mut MasterSolution, tight: Option<Vec<bool>>) {
        self.idle.resize(self.hyps.len(), 0);
        // A vertex's weights leave out columns that the interior point would weigh; a
        // tight column (edge at gamma) is not idle either.
        let tight = tight.unwrap_or_else(|| vec![false; ms.w.len()]);
        for ((n, &w), &t) in self.idle.iter_mut().zip(&ms.w).zip(&tight) {
            *n = if w > 1e-9 || t { 0 } else { *n + 1 };
        }
        let keep: Vec<bool> = self.idle.iter().map(|&n| n < IDLE_ROUNDS).collect();
        if keep.iter().any(|k| !k) {
            if let Some(wm) = self.warm.as_mut() {
                if wm.retain_columns(&keep).is_err() {
                    self.warm = None;
                }
            }
            retain_flagged(&mut self.hyps, &keep);
            retain_flagged(&mut self.grouped, &keep);
            retain_flagged(&mut self.idle, &keep);
            retain_flagged(&mut ms.w, &keep);
            retain_flagged(&mut self.outs, &keep);
        }
        let y = self.y;
        self.work = next_working_set(y, &self.outs, ms);
        if let Some(wm) = self.warm.as_mut().filter(|_| self.row_sets) {
            if wm
                .shrink(spare_rows(y.len()), y, &self.outs, &self.grouped, ms)
                .is_err()
            {
                self.warm = None;
            }
        }
    }

    /// Drops the columns a failed round added.
    fn truncate(&mut self, before: usize) {
        self.hyps.truncate(before);
        self.outs.truncate(before);
        self.grouped.truncate(before);
    }

    /// The simplex ends at a vertex: of the optimal weights (ties are common) it picks one
    /// on few hypotheses. The interior-point solution spreads the vote over every optimal
    /// column, as the fits did before the simplex; one solve at the end keeps that vote.
    /// Over the last working set of bags, as the interior-point rounds are: bags join until
    /// every bag left out has its margin (the full LP's optimum; ACSF1Frames' fit 15 %
    /// faster than over every bag, each of 41 fits' accuracy the same).
    fn central(&self, solution: MasterSolution) -> MasterSolution {
        if !self.params.warm_master {
            return solution;
        }
        let group = self
            .params
            .group_share
            .map(|s| (self.grouped.as_slice(), s));
        let p = &self.params;
        match solve_master_on_bags(
            self.y,
            &self.outs,
            &self.caps,
            p.max_weight,
            group,
            &self.work,
        ) {
            Ok((central, _)) if solution.w.len() == self.hyps.len() => central,
            _ => solution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_lp_by_hand() {
        // y*h1 = (1, -0.5), y*h2 = (0, 1), nu = 0.5 (cap 1, so d is free in the simplex).
        // min max(d1 - 0.5 d2, d2)  ->  d = (0.6, 0.4), gamma = 0.4;
        // w equalises both margins: w1 = 0.4, w2 = 0.6, margin rho = 0.4.
        let y = [1.0, -1.0];
        let outs = vec![vec![1.0, 0.5], vec![0.0, -1.0]];
        let s = solve_master(&y, &outs, 0.5).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(s.d[0], 0.6) && close(s.d[1], 0.4), "{:?}", s.d);
        assert!(close(s.gamma, 0.4));
        assert!(close(s.w[0], 0.4) && close(s.w[1], 0.6), "{:?}", s.w);
        assert!(close(s.rho, 0.4), "{}", s.rho);
    }

    #[test]
    fn master_lp_caps_d_at_one_over_nu_m() {
        // nu = 1 forces d = (1/2, 1/2).
        let y = [1.0, -1.0];
        let s = solve_master(&y, &[vec![1.0, 0.5], vec![0.0, -1.0]], 1.0).unwrap();
        assert!((s.d[0] - 0.5).abs() < 1e-6 && (s.d[1] - 0.5).abs() < 1e-6);
        assert!((s.gamma - 0.5).abs() < 1e-6);
    }

    /// A random master problem: m bags, every `pos_every`-th positive; `cols` columns of
    /// outputs uniform in [low, 1); every `group_every`-th column in the capped group.
    fn random_master(
        rng: &mut rand_chacha::ChaCha8Rng,
        m: usize,
        pos_every: usize,
        cols: usize,
        low: f64,
        group_every: usize,
    ) -> (Vec<f64>, Vec<Vec<f64>>, Vec<bool>) {
        use rand::Rng;
        let y = (0..m)
            .map(|i| if i % pos_every == 0 { 1.0 } else { -1.0 })
            .collect();
        let outs = (0..cols)
            .map(|_| (0..m).map(|_| rng.random_range(low..1.0)).collect())
            .collect();
        let grouped = (0..cols).map(|j| j % group_every == 0).collect();
        (y, outs, grouped)
    }

    /// Column generation over a finite pool, two columns a round and idle columns deleted,
    /// reaches the optimum of the master LP over the whole pool: deletion and batching
    /// change the path, not the margin.
    #[test]
    fn batched_columns_with_deletion_reach_the_full_pool_optimum() {
        use rand::SeedableRng;
        for seed in 0..8u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let m = 14;
            let (y, pool, grouped) = random_master(&mut rng, m, 3, 40, -1.0, 2);
            for (max_weight, group, warm_master) in [
                (None, None, false),
                (Some(0.2), Some(0.5), false),
                (None, None, true),
                (Some(0.2), Some(0.5), true),
            ] {
                let params = BoostParams {
                    nu: 0.3,
                    epsilon: 1e-9,
                    max_rounds: 500,
                    balanced: true,
                    max_weight,
                    group_share: group,
                    warm_master,
                    cancel: Cancel::now(),
                };
                let boosted = lpboost(&y, params, |d, _gamma, eta, cols: &[usize]| {
                    let gain = |j: usize| {
                        let e: f64 = (0..m).map(|i| y[i] * d[i] * pool[j][i]).sum();
                        e - if group.is_some() && grouped[j] {
                            eta
                        } else {
                            0.0
                        }
                    };
                    // A capped column is never offered twice (its copy would double its cap).
                    let mut order: Vec<usize> =
                        (0..pool.len()).filter(|j| !cols.contains(j)).collect();
                    order.sort_by(|&a, &b| gain(b).total_cmp(&gain(a)));
                    Ok(order
                        .iter()
                        .take(2)
                        .map(|&j| (j, pool[j].clone(), group.is_some() && grouped[j]))
                        .collect())
                })
                .unwrap();
                let (caps, _) = caps_and_start(&y, 0.3, true);
                let full = solve_master_capped(
                    &y,
                    &pool,
                    &caps,
                    max_weight,
                    group.map(|s| (grouped.as_slice(), s)),
                )
                .unwrap();
                let found: Vec<Vec<f64>> =
                    boosted.hypotheses.iter().map(|(_, o)| o.clone()).collect();
                let kept: Vec<bool> = boosted
                    .hypotheses
                    .iter()
                    .map(|(j, _)| grouped[*j])
                    .collect();
                let restricted = solve_master_capped(
                    &y,
                    &found,
                    &caps,
                    max_weight,
                    group.map(|s| (kept.as_slice(), s)),
                )
                .unwrap();
                assert!(
                    (restricted.objective - full.objective).abs() < 1e-6,
                    "seed {seed}, caps {max_weight:?}: optimum {} against the full pool's {}",
                    restricted.objective,
                    full.objective
                );
                assert!(
                    boosted.hypotheses.len() < pool.len(),
                    "seed {seed}: no column left out"
                );
                assert_eq!(boosted.hypotheses.len(), boosted.weights.len());
                assert_eq!(
                    boosted.master_fallbacks, 0,
                    "seed {seed}: the simplex gave up"
                );
            }
        }
    }

    /// The master over a working set of bags reaches the optimum over all bags, from any
    /// first set, and its d leaves every bag outside the final set at 0.
    #[test]
    fn the_master_over_a_working_set_of_bags_reaches_the_full_optimum() {
        use rand::{Rng, SeedableRng};
        let mut left_out = 0;
        for seed in 0..6u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let m = 120;
            let (y, outs, grouped) = random_master(&mut rng, m, 4, 12, 0.0, 3);
            let (caps, _) = caps_and_start(&y, 0.2, true);
            let start: Vec<bool> = (0..m).map(|_| rng.random_bool(0.15)).collect();
            for (max_weight, group) in [(None, None), (Some(0.2), Some(0.5))] {
                let group = group.map(|s| (grouped.as_slice(), s));
                let full = solve_master_capped(&y, &outs, &caps, max_weight, group).unwrap();
                let (ws, work) =
                    solve_master_on_bags(&y, &outs, &caps, max_weight, group, &start).unwrap();
                assert!(
                    (ws.objective - full.objective).abs() < 1e-6,
                    "seed {seed}, caps {max_weight:?}: {} against {}",
                    ws.objective,
                    full.objective
                );
                if work.iter().any(|w| !w) {
                    left_out += 1;
                }
                assert!((0..m).all(|i| work[i] || ws.d[i] == 0.0));
                assert!((ws.d.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            }
        }
        assert!(
            left_out >= 6,
            "the working set kept out bags in only {left_out} of 12 cases"
        );
    }

    /// |a - b| within 1e-7 of the larger magnitude (at least 1).
    fn same_optimum(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-7 * a.abs().max(b.abs()).max(1.0)
    }

    /// The warm-started simplex reaches Clarabel's optimum round after round while columns
    /// join two at a time and idle ones leave, uncapped, capped, grouped and both, on the
    /// random masters of the tests above (and the working-set master's optimum), and so
    /// does the simplex over a working set of bags that grows and shrinks.
    #[test]
    fn the_warm_master_matches_clarabel_round_after_round() {
        use rand::{Rng, SeedableRng};
        let mut deleted = 0;
        for seed in 0..6u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            for (m, cols, low) in [(14, 40, -1.0), (120, 30, 0.0)] {
                let (y, pool, grouped) = random_master(&mut rng, m, 3, cols, low, 2);
                let (caps, _) = caps_and_start(&y, 0.3, true);
                let start: Vec<bool> = (0..m).map(|_| rng.random_bool(0.15)).collect();
                for (max_weight, share) in [
                    (None, None),
                    (Some(0.2), None),
                    (None, Some(0.5)),
                    (Some(0.2), Some(0.5)),
                ] {
                    let mut taken: Vec<usize> = vec![0, 1];
                    let mut idle: Vec<usize> = vec![0, 0];
                    let outs = |t: &[usize]| -> Vec<Vec<f64>> {
                        t.iter().map(|&j| pool[j].clone()).collect()
                    };
                    let flags =
                        |t: &[usize]| -> Vec<bool> { t.iter().map(|&j| grouped[j]).collect() };
                    let g = flags(&taken);
                    let mut wm = WarmMaster::new_on(
                        (0..m).collect(),
                        &y,
                        &outs(&taken),
                        &caps,
                        max_weight,
                        share.map(|s| (g.as_slice(), s)),
                    )
                    .unwrap();
                    // The same master over a working set of bags: three join at a time, rows
                    // of bags of no weight beyond two leave after each solve.
                    let mut rows = WarmMaster::new_on(
                        first_rows(&y, &outs(&taken), &caps, 2),
                        &y,
                        &outs(&taken),
                        &caps,
                        max_weight,
                        share.map(|s| (g.as_slice(), s)),
                    )
                    .unwrap();
                    let mut next = 2;
                    loop {
                        let ws = wm.solve().unwrap();
                        let g = flags(&taken);
                        let group = share.map(|s| (g.as_slice(), s));
                        let full = solve_master_capped(&y, &outs(&taken), &caps, max_weight, group)
                            .unwrap();
                        let at = format!(
                            "seed {seed}, m {m}, {max_weight:?}/{share:?}, {} columns",
                            taken.len()
                        );
                        assert!(
                            same_optimum(ws.objective, full.objective),
                            "{at}: simplex {} against Clarabel {}",
                            ws.objective,
                            full.objective
                        );
                        let on_rows = rows.solve_rows(&y, &outs(&taken), &g, 3).unwrap();
                        assert!(
                            same_optimum(on_rows.objective, full.objective),
                            "{at}: rows of a working set {} against Clarabel {}",
                            on_rows.objective,
                            full.objective
                        );
                        rows.shrink(2, &y, &outs(&taken), &g, &on_rows).unwrap();
                        let (bags, _) = solve_master_on_bags(
                            &y,
                            &outs(&taken),
                            &caps,
                            max_weight,
                            group,
                            &start,
                        )
                        .unwrap();
                        assert!(
                            same_optimum(ws.objective, bags.objective),
                            "{at}: working set"
                        );
                        assert!((ws.d.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{at}");
                        assert!(ws
                            .w
                            .iter()
                            .all(|&v| v >= 0.0 && v <= max_weight.unwrap_or(1.0) + 1e-9));
                        // The primal (4) and dual (5) objectives agree: rho - sum cap xi.
                        let xi: f64 = (0..m)
                            .map(|i| {
                                caps[i] * (ws.rho - margin(&y, &ws.w, &outs(&taken), i)).max(0.0)
                            })
                            .sum();
                        assert!(
                            (ws.rho - xi - ws.objective).abs() < 1e-7,
                            "{at}: primal value"
                        );
                        if next >= pool.len() {
                            break;
                        }
                        // Idle columns (no weight in two solves) leave; two new ones join.
                        for (n, &w) in idle.iter_mut().zip(&ws.w) {
                            *n = if w > 1e-9 { 0 } else { *n + 1 };
                        }
                        let keep: Vec<bool> = idle.iter().map(|&n| n < 2).collect();
                        if keep.iter().any(|k| !k) {
                            deleted += keep.iter().filter(|k| !**k).count();
                            wm.retain_columns(&keep).unwrap();
                            rows.retain_columns(&keep).unwrap();
                            retain_flagged(&mut taken, &keep);
                            retain_flagged(&mut idle, &keep);
                        }
                        for j in next..(next + 2).min(pool.len()) {
                            wm.add_column(&y, &pool[j], grouped[j]);
                            rows.add_column(&y, &pool[j], grouped[j]);
                            taken.push(j);
                            idle.push(0);
                        }
                        next += 2;
                    }
                }
            }
        }
        assert!(deleted > 50, "only {deleted} columns were deleted");
    }

    /// Duplicate columns and outputs equal on every bag (a master degenerate everywhere)
    /// still come to Clarabel's optimum, without a fallback.
    #[test]
    fn a_degenerate_master_terminates() {
        let m = 30;
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let (caps, _) = caps_and_start(&y, 0.3, true);
        let flat = vec![0.5; m];
        let split: Vec<f64> = (0..m).map(|i| if i < m / 2 { 1.0 } else { -1.0 }).collect();
        let labels = y.clone();
        for (max_weight, share) in [(None, None), (Some(0.25), Some(0.5))] {
            let mut outs: Vec<Vec<f64>> = vec![flat.clone(), flat.clone()];
            let g = [true; 12];
            let mut wm = WarmMaster::new_on(
                (0..m).collect(),
                &y,
                &outs,
                &caps,
                max_weight,
                share.map(|s| (&g[..2], s)),
            )
            .unwrap();
            for extra in [
                &flat, &split, &split, &labels, &labels, &flat, &labels, &split, &labels, &labels,
            ] {
                wm.add_column(&y, extra, true);
                outs.push(extra.clone());
                let ws = wm.solve().unwrap();
                let full = solve_master_capped(
                    &y,
                    &outs,
                    &caps,
                    max_weight,
                    share.map(|s| (&g[..outs.len()], s)),
                )
                .unwrap();
                assert!(
                    same_optimum(ws.objective, full.objective),
                    "{max_weight:?}, {} columns: {} against {}",
                    outs.len(),
                    ws.objective,
                    full.objective
                );
            }
        }
    }

    #[test]
    fn lpboost_stops_when_no_edge() {
        let y = [1.0, -1.0, 1.0];
        let r = lpboost(
            &y,
            BoostParams {
                nu: 0.5,
                epsilon: 1e-6,
                max_rounds: 10,
                balanced: false,
                max_weight: None,
                group_share: None,
                warm_master: false,
                cancel: Cancel::now(),
            },
            |_d, _, _, _| Ok(vec![((), vec![0.0, 0.0, 0.0], false)]),
        );
        assert!(matches!(r, Err(MilError::Training(_))));
    }
}
