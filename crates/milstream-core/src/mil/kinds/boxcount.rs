//! The box-counting kernel k∧ of Tao, Scott, Vinodchandran & Osugi, "SVM-Based Generalized
//! Multiple-Instance Learning via Approximate Box Counting" (ICML 2004), cited below as "the
//! paper".
//!
//! Bags are first discretized onto the grid X = {0..s}^d ([`Discretizer`]). k∧(P, Q) is the
//! number of axis-parallel boxes of X, degenerate ones included, that contain a point of P and
//! a point of Q: the dot product of GMIL-1's box-attribute vectors (Section 4, Observation 1).
//! Counting them is #P-complete (Section 5.1, Theorem 2), so the kernel is estimated with the
//! Karp-Luby-Madras union-of-sets FPRAS (Section 5.2, Theorems 3-4), with either the paper's
//! fixed sample count or an adaptive stopping rule of the same guarantee ([`SampleRule`]).
//! Counts reach 10^300 and beyond at MUSK's d = 166, so every count here is carried as its
//! natural log.
//!
//! k∧'s Gram is strongly diagonally dominant (diagonal / off-diagonal ~ 10^50 on MUSK), so the
//! paper hands the SVM the *empirical kernel map* instead (Section 5.3, after Schölkopf et al.
//! 2002): phi_n(x) = (phi(k(x, x_1)), ..., phi(k(x, x_n))) with the sub-polynomial
//! phi(k) = k^rho (rho = 1/50 on MUSK, Section 6.4), and k_emp(x, y) = phi_n(x) · phi_n(y),
//! which is a kernel whatever the (approximate) k is. The reference bags x_1..x_n are either the
//! training bags, or the training *and* unlabeled test bags: the paper calls the latter
//! *transduction* (Section 5.3; Table 2 reports both). Here the caller picks the reference set:
//! it is the `cols` argument of [`BoxKernel::ln_gram`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::mil::bag::Bag;
use crate::mil::error::{MilError, Result};

/// Largest grid resolution. The FPRAS keeps a bitset per dimension and grid value (see
/// `CoordinateMasks`), so its tables grow with s; 255 is far finer than box counting needs.
pub const MAX_S: u32 = 255;

/// The sub-polynomial exponent the paper uses on MUSK, phi(k) = k^(1/50) (Section 6.4).
pub const PAPER_MUSK_RHO: f64 = 1.0 / 50.0;

/// Most boxes [`box_count_exact`] will enumerate.
pub const EXACT_MAX_BOXES: u128 = 1 << 22;

/// Points of a bag the box kernel reads at most. The kernel of two bags works over their
/// pairs of points (`PairUnion`: |P| |Q| pairs, each with a bitset over P and Q), so a bag
/// of 20,000 instances asked for 2 TB; MUSK2's largest bag has 1,044.
pub const MAX_GRID_POINTS: usize = 1_024;

/// A bag on the grid {0..s}^d: `len()` points of `dim` coordinates, row-major.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GridBag {
    dim: usize,
    points: Vec<u16>,
}

impl GridBag {
    /// A bag from a row-major buffer of `points.len() / dim` grid points.
    pub fn new(dim: usize, points: Vec<u16>) -> Result<Self> {
        if dim == 0 || points.is_empty() || !points.len().is_multiple_of(dim) {
            return Err(MilError::InvalidData(format!(
                "a grid bag needs dimension > 0 and a non-empty whole number of points; got \
                 dimension {dim} and {} coordinates",
                points.len()
            )));
        }
        Ok(Self { dim, points })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len() / self.dim
    }

    /// Always false: a grid bag is never empty (checked on construction).
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn point(&self, i: usize) -> &[u16] {
        &self.points[i * self.dim..(i + 1) * self.dim]
    }

    pub fn points(&self) -> std::slice::ChunksExact<'_, u16> {
        self.points.chunks_exact(self.dim)
    }

    pub fn as_slice(&self) -> &[u16] {
        &self.points
    }
}

/// Per-feature equal-width discretization onto {0..s}, fitted on training ranges. The paper
/// assumes an already discrete space X = {0..s}^d "without loss of generality" (Section 3) and
/// does not say how it discretized; this is the plain choice: s + 1 equal-width cells over the
/// training range [lo, hi], values outside it clamped to the end cells, a constant feature
/// mapped to 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Discretizer {
    lo: Vec<f64>,
    hi: Vec<f64>,
    s: u32,
}

impl Discretizer {
    /// Feature ranges of all instances of `bags`, for the grid {0..s}.
    pub fn fit(bags: &[&Bag], s: u32) -> Result<Self> {
        if s == 0 || s > MAX_S {
            return Err(MilError::InvalidParameter(format!(
                "grid resolution s must be in 1..={MAX_S}, got {s}"
            )));
        }
        let dim = bags
            .first()
            .ok_or_else(|| MilError::InvalidData("no bags to fit a discretizer on".into()))?
            .dim();
        let mut lo = vec![f64::INFINITY; dim];
        let mut hi = vec![f64::NEG_INFINITY; dim];
        for (b, bag) in bags.iter().enumerate() {
            if bag.dim() != dim {
                return Err(MilError::InvalidData(format!(
                    "bag {b} has dimension {} but bag 0 has {dim}",
                    bag.dim()
                )));
            }
            for x in bag.instances() {
                for (f, &v) in x.iter().enumerate() {
                    lo[f] = lo[f].min(v);
                    hi[f] = hi[f].max(v);
                }
            }
        }
        Ok(Self { lo, hi, s })
    }

    pub fn s(&self) -> u32 {
        self.s
    }

    pub fn dim(&self) -> usize {
        self.lo.len()
    }

    /// The grid cell of value `v` of feature `f`.
    fn cell(&self, f: usize, v: f64) -> u16 {
        let width = self.hi[f] - self.lo[f];
        if width <= 0.0 {
            return 0;
        }
        let t = ((v - self.lo[f]) / width).clamp(0.0, 1.0);
        // floor(t * (s + 1)) puts t = 1 (the training maximum) one past the end: clamp it.
        ((t * f64::from(self.s + 1)) as u32).min(self.s) as u16
    }

    /// `bag` on the grid {0..s}^d. A bag of more than [`MAX_GRID_POINTS`] points keeps its
    /// distinct points (the boxes they cover are the same), and of those, when still more,
    /// that many evenly spread.
    pub fn apply(&self, bag: &Bag) -> Result<GridBag> {
        if bag.dim() != self.dim() {
            return Err(MilError::InvalidData(format!(
                "bag has dimension {} but the discretizer was fitted on dimension {}",
                bag.dim(),
                self.dim()
            )));
        }
        let points: Vec<u16> = bag
            .instances()
            .flat_map(|x| x.iter().enumerate().map(|(f, &v)| self.cell(f, v)))
            .collect();
        if points.len() <= MAX_GRID_POINTS * bag.dim() {
            return GridBag::new(bag.dim(), points);
        }
        let mut seen = std::collections::HashSet::new();
        let distinct: Vec<&[u16]> = points
            .chunks_exact(bag.dim())
            .filter(|p| seen.insert(*p))
            .collect();
        let n = distinct.len();
        let kept = n.min(MAX_GRID_POINTS);
        let points = (0..kept)
            .flat_map(|k| distinct[k * n / kept].iter().copied())
            .collect();
        GridBag::new(bag.dim(), points)
    }
}

fn check_same_dim(p: &GridBag, q: &GridBag) {
    assert_eq!(
        p.dim(),
        q.dim(),
        "box counting needs bags of one dimension ({} vs {})",
        p.dim(),
        q.dim()
    );
}

fn check_on_grid(bag: &GridBag, s: u32) {
    if let Some(&v) = bag.as_slice().iter().find(|&&v| u32::from(v) > s) {
        panic!("grid coordinate {v} lies outside the grid {{0..{s}}}");
    }
}

/// Exact k∧(P, Q) = |B(P ∧ Q)| (Section 4, Observation 1) by enumerating all
/// C(s+2, 2)^d boxes of X (Section 2). A test oracle: an error beyond [`EXACT_MAX_BOXES`].
pub fn box_count_exact(p: &GridBag, q: &GridBag, s: u32) -> Result<u128> {
    check_same_dim(p, q);
    check_on_grid(p, s);
    check_on_grid(q, s);
    let s = s as u16;
    // Section 2: per dimension, every interval [a, b] with a <= b, degenerate ones included.
    let intervals: Vec<(u16, u16)> = (0..=s).flat_map(|a| (a..=s).map(move |b| (a, b))).collect();
    let d = p.dim();
    let n_boxes = u32::try_from(d)
        .ok()
        .and_then(|d| (intervals.len() as u128).checked_pow(d))
        .filter(|&n| n <= EXACT_MAX_BOXES)
        .ok_or_else(|| {
            MilError::InvalidParameter(format!(
                "exact box counting would enumerate {}^{d} boxes (more than {EXACT_MAX_BOXES})",
                intervals.len()
            ))
        })?;
    let mut corner = vec![0usize; d]; // interval index per dimension: an odometer over boxes
    let mut count = 0u128;
    for _ in 0..n_boxes {
        let contains = |x: &[u16]| {
            x.iter().zip(&corner).all(|(&v, &k)| {
                let (a, b) = intervals[k];
                a <= v && v <= b
            })
        };
        if p.points().any(contains) && q.points().any(contains) {
            count += 1;
        }
        for digit in corner.iter_mut() {
            *digit += 1;
            if *digit < intervals.len() {
                break;
            }
            *digit = 0;
        }
    }
    Ok(count)
}

/// ln of [`box_count_exact`].
pub fn ln_box_count_exact(p: &GridBag, q: &GridBag, s: u32) -> Result<f64> {
    box_count_exact(p, q, s).map(|k| (k as f64).ln())
}

/// Theorem 3 (Karp et al. 1989) with Eq. (1): S = ceil(4 m ln(2/delta) / eps^2) samples make
/// the union estimate eps-good with probability >= 1 - delta when the union has `m` sets.
/// Theorem 4 states it for m = n^2 pairs.
pub fn klm_sample_count(m: usize, eps: f64, delta: f64) -> u64 {
    (4.0 * m as f64 * (2.0 / delta).ln() / (eps * eps)).ceil() as u64
}

/// The union B(P ∧ Q) = ∪_{p ∈ P, q ∈ Q} B(p ∧ q) of Section 5.2, as Karp-Luby-Madras sees it:
/// the sets B(p_i ∧ q_j) in the order ≺ (by i, then j) with their sizes.
///
/// Sets contained in an earlier set are dropped: when an earlier point p_i' (i' < i) or q_j'
/// (j' < j) lies in the bounding box of p_i and q_j, every box containing p_i and q_j contains
/// it too, so B(p_i ∧ q_j) ⊆ B(p_i' ∧ q_j) (or B(p_i ∧ q_j')). The union is unchanged, the
/// membership test of G below stays exact (a dropped set lies inside an earlier kept one), and
/// Eq. (1) holds with m = number of kept sets, so Theorem 3 needs proportionally fewer samples.
/// On the diagonal k∧(P, P) only the n sets B(p_i ∧ p_i) survive.
struct PairUnion<'a> {
    p: &'a GridBag,
    q: &'a GridBag,
    s: u32,
    /// Kept pairs (i, j), in ≺ order.
    pairs: Vec<(usize, usize)>,
    /// Running sums of |B(p_i ∧ q_j)| / max size over `pairs`, for sampling a set with
    /// probability |B_ij| / |U|. Sets 10^-300 times smaller than the largest underflow to
    /// weight 0; they would never be drawn anyway.
    cumulative: Vec<f64>,
    /// ln |U| = ln Σ |B(p_i ∧ q_j)|.
    ln_u: f64,
    masks: CoordinateMasks,
    /// Per kept pair (i, j), `masks.words` words: the points that precede it in ≺, i.e. the
    /// p_i' with i' < i and the q_j' with j' < j (the candidates of the G-membership check).
    earlier_points: Vec<u64>,
}

/// Bitsets over the points of P then Q (bit t is p_t, bit |P| + t is q_t): for dimension k and
/// grid value v, the points with coordinate >= v and those with coordinate <= v. The points
/// inside interval [lo, hi] of dimension k are `at_least(k, lo) & at_most(k, hi)`, so one
/// dimension of the G-membership check costs one AND per 64 points, not one test per point.
struct CoordinateMasks {
    words: usize,
    values: usize,
    at_least: Vec<u64>,
    at_most: Vec<u64>,
}

impl CoordinateMasks {
    fn new(p: &GridBag, q: &GridBag, s: u32) -> Self {
        let (d, values) = (p.dim(), s as usize + 1);
        let words = (p.len() + q.len()).div_ceil(64);
        let mut at_least = vec![0u64; d * values * words];
        for (t, x) in p.points().chain(q.points()).enumerate() {
            for (k, &v) in x.iter().enumerate() {
                at_least[(k * values + usize::from(v)) * words + t / 64] |= 1 << (t % 64);
            }
        }
        // Both start as "coordinate == v"; suffix and prefix ORs over v finish them.
        let mut at_most = at_least.clone();
        for k in 0..d {
            let row = |v: usize| (k * values + v) * words;
            for v in (0..values - 1).rev() {
                for w in 0..words {
                    at_least[row(v) + w] |= at_least[row(v + 1) + w];
                }
            }
            for v in 1..values {
                for w in 0..words {
                    at_most[row(v) + w] |= at_most[row(v - 1) + w];
                }
            }
        }
        Self {
            words,
            values,
            at_least,
            at_most,
        }
    }

    fn at_least(&self, k: usize, v: u32) -> &[u64] {
        let at = (k * self.values + v as usize) * self.words;
        &self.at_least[at..at + self.words]
    }

    fn at_most(&self, k: usize, v: u32) -> &[u64] {
        let at = (k * self.values + v as usize) * self.words;
        &self.at_most[at..at + self.words]
    }
}

impl<'a> PairUnion<'a> {
    fn new(p: &'a GridBag, q: &'a GridBag, s: u32) -> Self {
        check_same_dim(p, q);
        assert!(
            (1..=MAX_S).contains(&s),
            "grid resolution s must be in 1..={MAX_S}, got {s}"
        );
        check_on_grid(p, s);
        check_on_grid(q, s);
        let ln_of: Vec<f64> = (0..=s + 1).map(|v| f64::from(v).ln()).collect();
        let words = (p.len() + q.len()).div_ceil(64);
        let mut pairs = Vec::with_capacity(p.len() * q.len());
        let mut ln_sizes = Vec::with_capacity(p.len() * q.len());
        let mut earlier_points = Vec::with_capacity(p.len() * q.len() * words);
        for (i, pi) in p.points().enumerate() {
            for (j, qj) in q.points().enumerate() {
                let in_bounding_box = |x: &[u16]| {
                    x.iter()
                        .zip(pi.iter().zip(qj))
                        .all(|(&v, (&a, &b))| a.min(b) <= v && v <= a.max(b))
                };
                let redundant = (0..i).any(|k| in_bounding_box(p.point(k)))
                    || (0..j).any(|k| in_bounding_box(q.point(k)));
                if redundant {
                    continue;
                }
                // Section 5.2: |B(p ∧ q)| = Π (l_k + 1) · Π (s - u_k + 1), l = min(p, q),
                // u = max(p, q): lower corner in 0..=l_k, upper corner in u_k..=s.
                let ln_size: f64 = pi
                    .iter()
                    .zip(qj)
                    .map(|(&a, &b)| {
                        ln_of[usize::from(a.min(b)) + 1]
                            + ln_of[(s - u32::from(a.max(b))) as usize + 1]
                    })
                    .sum();
                pairs.push((i, j));
                ln_sizes.push(ln_size);
                let mut earlier = vec![0u64; words];
                for t in (0..i).chain(p.len()..p.len() + j) {
                    earlier[t / 64] |= 1 << (t % 64);
                }
                earlier_points.extend(earlier);
            }
        }
        // Log-sum-exp: weights relative to the largest set stay in (0, 1].
        let ln_max = ln_sizes.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let cumulative: Vec<f64> = ln_sizes
            .iter()
            .scan(0.0, |acc, &l| {
                *acc += (l - ln_max).exp();
                Some(*acc)
            })
            .collect();
        let total = *cumulative
            .last()
            .expect("the first pair (0, 0) is never redundant");
        Self {
            p,
            q,
            s,
            pairs,
            cumulative,
            ln_u: ln_max + total.ln(),
            masks: CoordinateMasks::new(p, q, s),
            earlier_points,
        }
    }

    /// Index into `pairs`, drawn with probability |B_ij| / |U|.
    fn sample_pair<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        if self.pairs.len() == 1 {
            return 0;
        }
        let total = self.cumulative[self.cumulative.len() - 1];
        let u = rng.random::<f64>() * total;
        self.cumulative
            .partition_point(|&c| c <= u)
            .min(self.pairs.len() - 1)
    }

    /// Draws a box c uniformly from the set of kept pair `pair` = (p_i, q_j) and reports
    /// whether (p_i, q_j, c) ∈ G, i.e. no earlier pair's set holds c. Section 5.2's O(dn)
    /// check: (p_i, q_j, c) ∉ G iff some p_i' with i' < i or some q_j' with j' < j lies in c.
    ///
    /// The box is drawn lazily, one dimension at a time, while the candidates are filtered:
    /// the corners in dimension k are independent of the others, so this is the same uniform
    /// box, and most samples are decided after a few of the d dimensions.
    fn is_first_cover<R: Rng + ?Sized>(
        &self,
        pair: usize,
        candidates: &mut [u64],
        rng: &mut R,
    ) -> bool {
        let words = self.masks.words;
        candidates.copy_from_slice(&self.earlier_points[pair * words..(pair + 1) * words]);
        let (i, j) = self.pairs[pair];
        let (pi, qj) = (self.p.point(i), self.q.point(j));
        for (k, (&a, &b)) in pi.iter().zip(qj).enumerate() {
            if candidates.iter().all(|&w| w == 0) {
                return true;
            }
            // Section 5.2: a uniform box of B(p ∧ q) has independent uniform corners,
            // lower in 0..=min(p_k, q_k) and upper in max(p_k, q_k)..=s.
            let lower = rng.random_range(0..=u32::from(a.min(b)));
            let upper = rng.random_range(u32::from(a.max(b))..=self.s);
            let inside = self
                .masks
                .at_least(k, lower)
                .iter()
                .zip(self.masks.at_most(k, upper));
            for (c, (&ge, &le)) in candidates.iter_mut().zip(inside) {
                *c &= ge & le;
            }
        }
        candidates.iter().all(|&w| w == 0)
    }

    /// ln of the Karp-Luby-Madras estimate |U| γ / S from `samples` draws (Section 5.2).
    /// -inf when no draw landed in G (k∧ >= 1 always, so only for absurdly few samples).
    fn ln_estimate<R: Rng + ?Sized>(&self, samples: u64, rng: &mut R) -> f64 {
        let mut candidates = vec![0u64; self.masks.words];
        let hits = (0..samples)
            .filter(|_| {
                let pair = self.sample_pair(rng);
                self.is_first_cover(pair, &mut candidates, rng)
            })
            .count();
        self.ln_u + (hits as f64 / samples as f64).ln()
    }

    /// ln of |U| μ̂ where μ̂ estimates μ = |G| / |U| by the stopping rule of Dagum, Karp, Luby
    /// & Ross (2000): draw until Υ1 = 1 + (1 + eps) 4 (e - 2) ln(2/delta) / eps^2 draws have
    /// landed in G, after N draws, and take μ̂ = Υ1 / N. Then μ̂ is within a factor 1 ± eps
    /// of μ with probability >= 1 - delta (their Stopping Rule Theorem, 0 < eps < 1), so
    /// |U| μ̂ is eps-good for k∧ exactly as Theorem 4's estimate is. The expected number of
    /// draws is about Υ1 |U| / |G| <= Υ1 m: Theorem 4's count is this worst case, and the
    /// rule pays only for the actual |U| / |G|. Past `max_samples` draws it falls back to
    /// the plain |U| γ / S.
    fn ln_estimate_stopping_rule<R: Rng + ?Sized>(
        &self,
        eps: f64,
        delta: f64,
        max_samples: u64,
        rng: &mut R,
    ) -> f64 {
        let upsilon = 4.0 * (std::f64::consts::E - 2.0) * (2.0 / delta).ln() / (eps * eps);
        let upsilon_1 = 1.0 + (1.0 + eps) * upsilon;
        let hits_needed = upsilon_1.ceil() as u64;
        let mut candidates = vec![0u64; self.masks.words];
        let (mut hits, mut draws) = (0u64, 0u64);
        while hits < hits_needed {
            if draws == max_samples {
                return self.ln_u + (hits as f64 / draws as f64).ln();
            }
            draws += 1;
            let pair = self.sample_pair(rng);
            if self.is_first_cover(pair, &mut candidates, rng) {
                hits += 1;
            }
        }
        self.ln_u + (upsilon_1 / draws as f64).ln()
    }
}

fn check_eps_delta(eps: f64, delta: f64) {
    assert!(
        eps > 0.0 && eps < 1.0 && delta > 0.0 && delta < 1.0,
        "the FPRAS needs 0 < eps < 1 and 0 < delta < 1, got eps {eps}, delta {delta}"
    );
}

/// How many samples the FPRAS draws per kernel entry. Both give an eps-good estimate with
/// probability >= 1 - delta and use the same sampler and G-membership check (Section 5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleRule {
    /// The paper's fixed count, Theorem 4: S = ceil(4 m ln(2/delta) / eps^2) for m sets, sized
    /// for the worst case |U| / |G| = m. About 40 000 samples for a pair of 5-point bags at
    /// eps = 0.1, delta = 0.05; 1.6 * 10^8 for a MUSK1 Gram.
    Theorem4,
    /// The Dagum-Karp-Luby-Ross stopping rule: sample until about 4 (e - 2) (1 + eps)
    /// ln(2/delta) / eps^2 draws have landed in G (1 170 at eps = 0.1, delta = 0.05), so the
    /// cost follows the actual |U| / |G| instead of its bound m.
    StoppingRule,
}

/// ln k∧(P, Q) by the FPRAS of Section 5.2: an eps-good estimate with probability >= 1 - delta
/// (Theorem 4), from [`klm_sample_count`] samples over the non-redundant pairs.
pub fn ln_box_count_fpras<R: Rng + ?Sized>(
    p: &GridBag,
    q: &GridBag,
    s: u32,
    eps: f64,
    delta: f64,
    rng: &mut R,
) -> f64 {
    ln_box_count_by(SampleRule::Theorem4, p, q, s, eps, delta, None, rng)
}

/// ln k∧(P, Q) by the Section 5.2 estimator with the samples chosen by `rule`, at most
/// `max_samples` of them when given (which voids the eps/delta guarantee if it binds).
#[allow(clippy::too_many_arguments)]
pub fn ln_box_count_by<R: Rng + ?Sized>(
    rule: SampleRule,
    p: &GridBag,
    q: &GridBag,
    s: u32,
    eps: f64,
    delta: f64,
    max_samples: Option<u64>,
    rng: &mut R,
) -> f64 {
    check_eps_delta(eps, delta);
    let union = PairUnion::new(p, q, s);
    let cap = max_samples.unwrap_or(u64::MAX);
    match rule {
        SampleRule::Theorem4 => {
            let samples = klm_sample_count(union.pairs.len(), eps, delta).min(cap);
            union.ln_estimate(samples, rng)
        }
        SampleRule::StoppingRule => union.ln_estimate_stopping_rule(eps, delta, cap, rng),
    }
}

/// Bit mixer of SplitMix64: decorrelates seeds that differ in a few bits.
fn splitmix64(z: u64) -> u64 {
    let z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash of a bag's contents, stable across runs, platforms and Rust versions.
fn fingerprint(bag: &GridBag) -> u64 {
    bag.as_slice()
        .chunks(4)
        .fold(splitmix64(bag.dim() as u64), |h, c| {
            let word = c
                .iter()
                .enumerate()
                .fold(0u64, |w, (k, &v)| w | (u64::from(v) << (16 * k)));
            splitmix64(h ^ word)
        })
}

/// The box-counting kernel with its estimation settings and the Section 5.3 transform.
///
/// Every estimate k∧(P, Q) draws from its own ChaCha8 stream seeded by (seed, P, Q) *contents*
/// with P and Q in a canonical order. So an entry does not depend on its position, on thread
/// scheduling or on argument order: `ln_gram` is exactly symmetric on a square input, and a
/// pair of bags gets the same value in the training Gram, a transductive Gram or at prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoxKernel {
    s: u32,
    eps: f64,
    delta: f64,
    seed: u64,
    rho: f64,
    rule: SampleRule,
    max_samples: Option<u64>,
}

impl BoxKernel {
    /// Kernel on the grid {0..s}^d, estimated eps-good with probability >= 1 - delta per entry
    /// (the paper's experiments use eps = 0.1, delta = 0.01; Section 6), with the MUSK
    /// exponent rho = 1/50, no cap on samples, and the stopping rule: it carries the same
    /// guarantee as Theorem 4's count and builds a MUSK1 Gram about 30x faster (see
    /// [`SampleRule`]).
    pub fn new(s: u32, eps: f64, delta: f64, seed: u64) -> Result<Self> {
        let kernel = Self {
            s,
            eps,
            delta,
            seed,
            rho: PAPER_MUSK_RHO,
            rule: SampleRule::StoppingRule,
            max_samples: None,
        };
        kernel.validate()?;
        Ok(kernel)
    }

    /// The exponent of phi(k) = k^rho (Section 5.3), 0 < rho < 1.
    pub fn with_rho(mut self, rho: f64) -> Result<Self> {
        self.rho = rho;
        self.validate()?;
        Ok(self)
    }

    /// How many samples each entry draws.
    pub fn with_rule(mut self, rule: SampleRule) -> Self {
        self.rule = rule;
        self
    }

    /// Caps the samples per entry below what the rule asks for. The eps/delta guarantee then no
    /// longer holds; use it only to trade accuracy for time on very large bags.
    pub fn with_max_samples(mut self, max_samples: u64) -> Result<Self> {
        self.max_samples = Some(max_samples);
        self.validate()?;
        Ok(self)
    }

    /// Checks the settings, e.g. of a deserialized kernel.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(MilError::InvalidParameter(what));
        if self.s == 0 || self.s > MAX_S {
            return bad(format!(
                "grid resolution s must be in 1..={MAX_S}, got {}",
                self.s
            ));
        }
        if !(self.eps > 0.0 && self.eps < 1.0) {
            return bad(format!("eps must be in (0, 1), got {}", self.eps));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return bad(format!("delta must be in (0, 1), got {}", self.delta));
        }
        if !(self.rho > 0.0 && self.rho < 1.0) {
            return bad(format!("rho must be in (0, 1), got {}", self.rho));
        }
        if self.max_samples == Some(0) {
            return bad("max_samples must be at least 1".into());
        }
        Ok(())
    }

    pub fn s(&self) -> u32 {
        self.s
    }

    pub fn eps(&self) -> f64 {
        self.eps
    }

    pub fn delta(&self) -> f64 {
        self.delta
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn rho(&self) -> f64 {
        self.rho
    }

    pub fn rule(&self) -> SampleRule {
        self.rule
    }

    pub fn max_samples(&self) -> Option<u64> {
        self.max_samples
    }

    /// ln k∧(P, Q), estimated by the FPRAS (Section 5.2) from the (seed, P, Q) stream.
    pub fn ln_kernel(&self, p: &GridBag, q: &GridBag) -> f64 {
        self.ln_kernel_fingerprinted(p, fingerprint(p), q, fingerprint(q))
    }

    fn ln_kernel_fingerprinted(&self, p: &GridBag, fp: u64, q: &GridBag, fq: u64) -> f64 {
        // k∧ is symmetric; estimating it in one canonical order makes the estimate symmetric.
        let ((p, fp), (q, fq)) = if (fp, p.as_slice()) <= (fq, q.as_slice()) {
            ((p, fp), (q, fq))
        } else {
            ((q, fq), (p, fp))
        };
        let mut rng = ChaCha8Rng::seed_from_u64(splitmix64(splitmix64(self.seed ^ fp) ^ fq));
        ln_box_count_by(
            self.rule,
            p,
            q,
            self.s,
            self.eps,
            self.delta,
            self.max_samples,
            &mut rng,
        )
    }

    /// ln k∧ of every row bag against every column bag, row-major `rows.len() × cols.len()`,
    /// entries computed in parallel. For the Section 5.3 features the columns are the
    /// reference bags: the training bags, or training + test bags for transduction.
    pub fn ln_gram(&self, rows: &[GridBag], cols: &[GridBag]) -> Vec<f64> {
        let row_fps: Vec<u64> = rows.iter().map(fingerprint).collect();
        let col_fps: Vec<u64> = cols.iter().map(fingerprint).collect();
        let n_cols = cols.len();
        (0..rows.len() * n_cols)
            .into_par_iter()
            .map(|e| {
                let (i, j) = (e / n_cols, e % n_cols);
                self.ln_kernel_fingerprinted(&rows[i], row_fps[i], &cols[j], col_fps[j])
            })
            .collect()
    }

    /// `ln_gram(bags, bags)` at half the cost: the upper triangle, mirrored. Equal to it
    /// entry for entry, since every estimate is symmetric.
    pub fn ln_gram_symmetric(&self, bags: &[GridBag]) -> Vec<f64> {
        let n = bags.len();
        let fps: Vec<u64> = bags.iter().map(fingerprint).collect();
        let upper: Vec<(usize, usize)> = (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).collect();
        let values: Vec<f64> = upper
            .par_iter()
            .map(|&(i, j)| self.ln_kernel_fingerprinted(&bags[i], fps[i], &bags[j], fps[j]))
            .collect();
        let mut gram = vec![0.0; n * n];
        for (&(i, j), &v) in upper.iter().zip(&values) {
            gram[i * n + j] = v;
            gram[j * n + i] = v;
        }
        gram
    }

    /// The empirical kernel map of one bag (Section 5.3): phi(k(x, x_i)) = k(x, x_i)^rho for
    /// its row of ln k∧ against the reference bags, computed as exp(rho · ln k) so counts
    /// beyond f64's range never materialize (10^660 at rho = 1/50 is 10^13.2).
    pub fn empirical_features(&self, ln_k_row: &[f64]) -> Vec<f64> {
        ln_k_row.iter().map(|&l| (self.rho * l).exp()).collect()
    }
}

/// k_emp(x, y) = phi_n(x) · phi_n(y) (Section 5.3) for every row of `a` against every row of
/// `b`, both row-major feature matrices of width `n_reference`; row-major result.
pub fn empirical_gram(a: &[f64], b: &[f64], n_reference: usize) -> Vec<f64> {
    assert!(
        n_reference > 0
            && a.len().is_multiple_of(n_reference)
            && b.len().is_multiple_of(n_reference),
        "feature matrices of {} and {} values are not whole rows of {n_reference}",
        a.len(),
        b.len()
    );
    a.par_chunks_exact(n_reference)
        .flat_map_iter(|x| {
            b.chunks_exact(n_reference)
                .map(move |y| x.iter().zip(y).map(|(u, v)| u * v).sum::<f64>())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(dim: usize, points: &[u16]) -> GridBag {
        GridBag::new(dim, points.to_vec()).unwrap()
    }

    /// A bag of `sizes` (drawn) points on {0..s}^dim.
    fn random_bag(
        rng: &mut ChaCha8Rng,
        dim: usize,
        sizes: std::ops::RangeInclusive<usize>,
        s: u32,
    ) -> GridBag {
        let n = rng.random_range(sizes);
        let points = (0..n * dim)
            .map(|_| rng.random_range(0..=s) as u16)
            .collect();
        GridBag::new(dim, points).unwrap()
    }

    /// An independent oracle: inclusion-exclusion over subsets T of the pairs,
    /// |∪ B_ij| = Σ_T (-1)^{|T|+1} |∩_T B_ij|, and a box holds all points of T iff it holds
    /// their bounding box.
    fn inclusion_exclusion(p: &GridBag, q: &GridBag, s: u32) -> i128 {
        let pairs: Vec<(&[u16], &[u16])> = p
            .points()
            .flat_map(|a| q.points().map(move |b| (a, b)))
            .collect();
        assert!(pairs.len() <= 16);
        let mut total = 0i128;
        for mask in 1u32..(1 << pairs.len()) {
            let mut size = 1i128;
            for k in 0..p.dim() {
                let coords = pairs
                    .iter()
                    .enumerate()
                    .filter(|(t, _)| mask >> t & 1 == 1)
                    .flat_map(|(_, (a, b))| [a[k], b[k]]);
                let (lo, hi) = coords.fold((u16::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
                size *= i128::from(lo + 1) * (i128::from(s) - i128::from(hi) + 1);
            }
            total += if mask.count_ones() % 2 == 1 {
                size
            } else {
                -size
            };
        }
        total
    }

    #[test]
    fn exact_counts_hand_checked() {
        // d = 1, s = 2: the only interval holding 0 and 2 is [0, 2].
        assert_eq!(
            box_count_exact(&grid(1, &[0]), &grid(1, &[2]), 2).unwrap(),
            1
        );
        // d = 1, s = 3, P = Q = {1}: lower in {0, 1}, upper in {1, 2, 3}.
        assert_eq!(
            box_count_exact(&grid(1, &[1]), &grid(1, &[1]), 3).unwrap(),
            6
        );
        // d = 2, s = 1: only the full square holds (0,0) and (1,1); (0,0) alone is held by
        // lower corner (0,0) and any of the 4 upper corners.
        assert_eq!(
            box_count_exact(&grid(2, &[0, 0]), &grid(2, &[1, 1]), 1).unwrap(),
            1
        );
        assert_eq!(
            box_count_exact(&grid(2, &[0, 0]), &grid(2, &[0, 0]), 1).unwrap(),
            4
        );
        // d = 2, s = 2, P = {(0,1)}, Q = {(2,1)}: x-interval [0,2] (1 way), y-interval
        // holding 1: 2 × 2 = 4 ways.
        assert_eq!(
            box_count_exact(&grid(2, &[0, 1]), &grid(2, &[2, 1]), 2).unwrap(),
            4
        );
        // A bag of every grid point meets every box: C(s+2, 2)^d (Section 2).
        let all: Vec<u16> = (0..3)
            .flat_map(|x| (0..3).flat_map(move |y| [x, y]))
            .collect();
        let all = grid(2, &all);
        assert_eq!(box_count_exact(&all, &all, 2).unwrap(), 6 * 6);
        assert!((ln_box_count_exact(&all, &all, 2).unwrap() - 36f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn exact_count_refuses_huge_enumerations() {
        let p = grid(8, &[0; 8]);
        assert!(matches!(
            box_count_exact(&p, &p, 9),
            Err(MilError::InvalidParameter(_))
        ));
    }

    #[test]
    fn exact_enumeration_agrees_with_inclusion_exclusion_and_the_pair_formula() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..300 {
            let s = rng.random_range(1..=4);
            let d = rng.random_range(1..=3);
            let p = random_bag(&mut rng, d, 1..=4, s);
            let q = random_bag(&mut rng, d, 1..=4, s);
            let exact = box_count_exact(&p, &q, s).unwrap();
            assert_eq!(
                exact as i128,
                inclusion_exclusion(&p, &q, s),
                "{p:?} {q:?} s {s}"
            );
            // Single points: the Section 5.2 product formula.
            let (a, b) = (grid(d, p.point(0)), grid(d, q.point(0)));
            let union = PairUnion::new(&a, &b, s);
            let exact_pair = box_count_exact(&a, &b, s).unwrap() as f64;
            assert!((union.ln_u - exact_pair.ln()).abs() < 1e-9);
        }
    }

    #[test]
    fn exact_count_is_symmetric_and_monotone() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for _ in 0..200 {
            let s = rng.random_range(1..=4);
            let d = rng.random_range(1..=3);
            let p = random_bag(&mut rng, d, 1..=3, s);
            let q = random_bag(&mut rng, d, 1..=3, s);
            let k = box_count_exact(&p, &q, s).unwrap();
            assert_eq!(k, box_count_exact(&q, &p, s).unwrap());
            let extra = random_bag(&mut rng, d, 1..=1, s);
            let grown = grid(d, &[p.as_slice(), extra.as_slice()].concat());
            assert!(box_count_exact(&grown, &q, s).unwrap() >= k);
        }
    }

    #[test]
    fn fpras_is_eps_good_in_at_least_one_minus_delta_of_trials() {
        eps_good_trials(SampleRule::Theorem4);
    }

    #[test]
    fn stopping_rule_is_eps_good_in_at_least_one_minus_delta_of_trials() {
        eps_good_trials(SampleRule::StoppingRule);
    }

    fn eps_good_trials(rule: SampleRule) {
        let (eps, delta, trials) = (0.1, 0.05, 200);
        let mut problems = ChaCha8Rng::seed_from_u64(3);
        let mut failures = 0;
        for t in 0..trials {
            let s = problems.random_range(1..=4);
            let d = problems.random_range(1..=3);
            let p = random_bag(&mut problems, d, 1..=4, s);
            let q = random_bag(&mut problems, d, 1..=4, s);
            let exact = box_count_exact(&p, &q, s).unwrap() as f64;
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + t);
            let estimate = ln_box_count_by(rule, &p, &q, s, eps, delta, None, &mut rng).exp();
            if (estimate - exact).abs() > eps * exact {
                failures += 1;
            }
        }
        println!("{rule:?}: {failures} of {trials} trials off by more than eps = {eps}");
        assert!(f64::from(failures) / f64::from(trials as u32) <= delta + 0.02);
    }

    #[test]
    fn estimates_center_on_the_exact_count_of_a_hard_problem() {
        // Overlapping bags with many non-redundant pairs, so the estimate is a real union
        // estimate. |U| γ / S is unbiased and the stopping rule's bias is O(1 / Υ1), so the
        // mean of 200 runs sits within 1% of k∧ (its standard error is about 0.2%).
        let s = 4;
        let p = grid(3, &[0, 4, 1, 2, 2, 2, 4, 0, 3, 1, 3, 0]);
        let q = grid(3, &[3, 3, 1, 1, 0, 4, 2, 4, 2, 4, 1, 0]);
        let exact = box_count_exact(&p, &q, s).unwrap() as f64;
        let union = PairUnion::new(&p, &q, s);
        assert!(union.pairs.len() >= 8, "only {} pairs", union.pairs.len());
        let runs = 200;
        for rule in [SampleRule::Theorem4, SampleRule::StoppingRule] {
            let mean = (0..runs)
                .map(|r| {
                    let mut rng = ChaCha8Rng::seed_from_u64(r);
                    ln_box_count_by(rule, &p, &q, s, 0.1, 0.05, None, &mut rng).exp()
                })
                .sum::<f64>()
                / runs as f64;
            assert!(
                (mean / exact - 1.0).abs() < 0.01,
                "{rule:?}: mean {mean}, exact {exact}"
            );
        }
    }

    #[test]
    fn log_space_holds_at_musk_dimension() {
        let d = 166;
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        // s = 8: at most C(10, 2)^166 = 10^274.4 boxes exist, so ln k∧ <= 166 ln 45.
        let (p, q) = (
            random_bag(&mut rng, d, 5..=5, 8),
            random_bag(&mut rng, d, 5..=5, 8),
        );
        for (a, b) in [(&p, &q), (&p, &p), (&q, &q)] {
            let l = ln_box_count_fpras(a, b, 8, 0.1, 0.05, &mut rng);
            assert!(
                l.is_finite() && l > 0.0 && l <= 166.0 * 45f64.ln() + 1e-9,
                "{l}"
            );
        }
        // s = 32: k∧(P, P) is far beyond f64's 1.8e308 and must still come out finite.
        let p = random_bag(&mut rng, d, 5..=5, 32);
        let l = ln_box_count_fpras(&p, &p, 32, 0.1, 0.05, &mut rng);
        assert!(l.is_finite() && l > 300.0 * 10f64.ln(), "{l}");
        // A single point: one set and no candidates, so the FPRAS is exact:
        // Π (p_k + 1)(s - p_k + 1).
        let x = random_bag(&mut rng, d, 1..=1, 32);
        let exact: f64 = x
            .as_slice()
            .iter()
            .map(|&v| (f64::from(v) + 1.0).ln() + (32.0 - f64::from(v) + 1.0).ln())
            .sum();
        let l = ln_box_count_fpras(&x, &x, 32, 0.1, 0.05, &mut rng);
        assert!((l - exact).abs() < 1e-9 * exact, "{l} vs {exact}");
    }

    #[test]
    fn diagonal_keeps_only_the_self_pairs() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let p = random_bag(&mut rng, 20, 6..=6, 8);
        let union = PairUnion::new(&p, &p, 8);
        assert_eq!(union.pairs, (0..6).map(|i| (i, i)).collect::<Vec<_>>());
    }

    #[test]
    fn gram_is_deterministic_symmetric_and_independent_of_threads() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let bags: Vec<GridBag> = (0..7).map(|_| random_bag(&mut rng, 4, 1..=5, 6)).collect();
        // d = 4: earlier points often fall in a sampled box, so estimates are truly random.
        let kernel = BoxKernel::new(6, 0.2, 0.1, 42)
            .unwrap()
            .with_rule(SampleRule::Theorem4);
        let parallel = kernel.ln_gram(&bags, &bags);
        assert_eq!(parallel, kernel.ln_gram(&bags, &bags));
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| kernel.ln_gram(&bags, &bags));
        assert_eq!(parallel, one_thread);
        let serial: Vec<f64> = bags
            .iter()
            .flat_map(|p| bags.iter().map(|q| kernel.ln_kernel(p, q)))
            .collect();
        assert_eq!(parallel, serial);
        assert_eq!(parallel, kernel.ln_gram_symmetric(&bags));
        // Position does not matter: a sub-Gram equals the corresponding block.
        let block = kernel.ln_gram(&bags[2..4], &bags[..3]);
        for (r, i) in (2..4).enumerate() {
            for j in 0..3 {
                assert_eq!(block[r * 3 + j], parallel[i * 7 + j]);
            }
        }
        let reseeded = BoxKernel::new(6, 0.2, 0.1, 43)
            .unwrap()
            .with_rule(SampleRule::Theorem4)
            .ln_gram(&bags, &bags);
        assert_ne!(parallel, reseeded);
        assert!(parallel.iter().all(|v| v.is_finite()));
        let adaptive = kernel.clone().with_rule(SampleRule::StoppingRule);
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| adaptive.ln_gram(&bags, &bags));
        assert_eq!(adaptive.ln_gram_symmetric(&bags), one_thread);
    }

    #[test]
    fn discretizer_maps_training_ranges_onto_the_grid() {
        let train = Bag::from_instances(&[vec![0.0, 5.0, -1.0], vec![10.0, 5.0, 1.0]]).unwrap();
        let d = Discretizer::fit(&[&train], 4).unwrap();
        let g = d.apply(&train).unwrap();
        assert_eq!(g.as_slice(), &[0, 0, 0, 4, 0, 4]);
        // Five equal cells of width 2 over [0, 10]; outside values clamp; constant -> 0.
        let test = Bag::from_instances(&[vec![3.9, 7.0, 0.0], vec![-3.0, 5.0, 9.0]]).unwrap();
        assert_eq!(d.apply(&test).unwrap().as_slice(), &[1, 0, 2, 0, 0, 4]);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<Discretizer>(&json).unwrap(), d);
        assert!(Discretizer::fit(&[&train], 0).is_err());
        let other = Bag::from_instances(&[vec![1.0]]).unwrap();
        assert!(d.apply(&other).is_err());
        assert!(Discretizer::fit(&[&train, &other], 4).is_err());
    }

    #[test]
    fn a_large_bag_keeps_its_distinct_points_at_most_the_limit() {
        // 3,000 instances on 30 grid points: the 30 distinct ones, in first-seen order.
        let few: Vec<Vec<f64>> = (0..3_000).map(|i| vec![(i % 30) as f64]).collect();
        let few = Bag::from_instances(&few).unwrap();
        let d = Discretizer::fit(&[&few], 40).unwrap();
        let g = d.apply(&few).unwrap();
        assert_eq!(g.len(), 30);
        assert_eq!(
            g.as_slice(),
            d.apply(
                &Bag::from_instances(&(0..30).map(|i| vec![i as f64]).collect::<Vec<_>>()).unwrap()
            )
            .unwrap()
            .as_slice()
        );
        // 5,000 points, most distinct on a 256 x 256 grid: 1,024 of them, the first included.
        let many: Vec<Vec<f64>> = (0..5_000)
            .map(|i| vec![i as f64, (i * 7 % 5_000) as f64])
            .collect();
        let many = Bag::from_instances(&many).unwrap();
        let d = Discretizer::fit(&[&many], 255).unwrap();
        let g = d.apply(&many).unwrap();
        assert_eq!(g.len(), MAX_GRID_POINTS);
        assert_eq!(
            &g.as_slice()[..2],
            &d.apply(&Bag::from_instances(&[vec![0.0, 0.0]]).unwrap())
                .unwrap()
                .as_slice()[..2]
        );
        // A bag at the limit is read as it is, duplicates and order kept.
        let at: Vec<Vec<f64>> = (0..MAX_GRID_POINTS).map(|i| vec![(i % 3) as f64]).collect();
        let at = Bag::from_instances(&at).unwrap();
        assert_eq!(
            Discretizer::fit(&[&at], 4)
                .unwrap()
                .apply(&at)
                .unwrap()
                .len(),
            MAX_GRID_POINTS
        );
    }

    #[test]
    fn empirical_map_applies_the_sub_polynomial_transform() {
        let kernel = BoxKernel::new(8, 0.1, 0.05, 0)
            .unwrap()
            .with_rho(0.5)
            .unwrap();
        let features = kernel.empirical_features(&[0.0, 4f64.ln(), 1000.0]);
        assert!((features[0] - 1.0).abs() < 1e-12 && (features[1] - 2.0).abs() < 1e-12);
        assert!(features[2].is_finite() && (features[2].ln() - 500.0).abs() < 1e-9);
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [1.0, 0.0, 0.0, 1.0, 2.0, 2.0];
        assert_eq!(
            empirical_gram(&a, &b, 2),
            vec![1.0, 2.0, 6.0, 3.0, 4.0, 14.0]
        );
        assert!(BoxKernel::new(8, 0.1, 0.05, 0)
            .unwrap()
            .with_rho(1.5)
            .is_err());
        assert!(BoxKernel::new(8, 0.0, 0.05, 0).is_err());
        assert!(BoxKernel::new(8, 0.1, 1.0, 0).is_err());
    }

    /// MUSK1-sized timing: `cargo test --release --lib mil::kinds::boxcount -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn musk1_gram_timing() {
        use crate::mil::Sample;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/musk1.csv");
        let text = std::fs::read_to_string(path).unwrap();
        let ds = crate::data::parse_mil(path, &text).unwrap();
        let bags: Vec<&Bag> = ds
            .samples
            .iter()
            .map(|s| match s {
                Sample::Bag(b) => b,
                Sample::Series(_) | Sample::Multi(_) => unreachable!("MUSK1 is bag data"),
            })
            .collect();
        for (s, rule) in [
            (8, SampleRule::Theorem4),
            (8, SampleRule::StoppingRule),
            (16, SampleRule::StoppingRule),
        ] {
            let disc = Discretizer::fit(&bags, s).unwrap();
            let grid: Vec<GridBag> = bags.iter().map(|b| disc.apply(b).unwrap()).collect();
            let kernel = BoxKernel::new(s, 0.1, 0.05, 7).unwrap().with_rule(rule);
            let start = std::time::Instant::now();
            let gram = kernel.ln_gram_symmetric(&grid);
            let elapsed = start.elapsed();
            let n = grid.len();
            assert!(gram.iter().all(|v| v.is_finite()));
            let ratios: Vec<f64> = (0..n)
                .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
                .map(|(i, j)| (gram[i * n + i] - gram[i * n + j]) / 10f64.ln())
                .collect();
            let mean_ratio = ratios.iter().sum::<f64>() / ratios.len() as f64;
            println!(
                "MUSK1 s = {s}, {rule:?}: {n}x{n} ln Gram (upper triangle) in {elapsed:.2?} on {} threads; \
                 ln k in [{:.1}, {:.1}]; mean log10(diagonal / off-diagonal) {mean_ratio:.1}",
                rayon::current_num_threads(),
                gram.iter().copied().fold(f64::INFINITY, f64::min),
                gram.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
        }
    }
}
