//! The Population Stability Index of a sample of scores against a reference binned by its
//! quantiles: PSI = sum_b (p_b - q_b) ln(p_b / q_b) (Yurdakul, "Statistical properties of
//! population stability index", 2018, eq. 1), with the shares of empty bins floored at
//! [`PSI_FLOOR`] so that a bin one side leaves empty adds a large but finite term.
//!
//! The daemon's label-free distribution test (`stream::quality::ScoreWatch`) bins each
//! class's served scores with it against its version's first window of predictions.

use serde::{Deserialize, Serialize};

/// The share an empty bin counts as on either side (1 in 10,000).
pub const PSI_FLOOR: f64 = 1e-4;

/// A reference distribution: the inner quantile edges of a reference sample and the share
/// of that sample in each bin (not always 1/bins: tied values fall into one bin).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreBins {
    /// Ascending inner edges; bin b holds the values with exactly b edges at or below them.
    pub edges: Vec<f64>,
    /// The reference sample's share per bin (edges.len() + 1 of them, summing to 1).
    pub shares: Vec<f64>,
}

impl ScoreBins {
    /// `bins` bins at the quantiles of `sample` (linear interpolation); None when the sample
    /// has no finite value or `bins` is 0.
    pub fn of(sample: &[f64], bins: usize) -> Option<ScoreBins> {
        let mut v: Vec<f64> = sample.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() || bins == 0 {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let quantile = |p: f64| {
            let at = p * (v.len() - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
        };
        let edges: Vec<f64> = (1..bins)
            .map(|b| quantile(b as f64 / bins as f64))
            .collect();
        let mut counts = vec![0u64; bins];
        let mut reference = ScoreBins {
            edges,
            shares: Vec::new(),
        };
        for &x in &v {
            counts[reference.bin(x)] += 1;
        }
        reference.shares = counts.iter().map(|&c| c as f64 / v.len() as f64).collect();
        Some(reference)
    }

    /// The bin of `x`: how many edges are at or below it.
    pub fn bin(&self, x: f64) -> usize {
        self.edges.partition_point(|&e| e <= x)
    }

    /// The PSI of a sample given as its counts per bin against this reference.
    pub fn psi(&self, counts: &[u64]) -> f64 {
        let n: u64 = counts.iter().sum();
        if n == 0 {
            return 0.0;
        }
        counts
            .iter()
            .zip(&self.shares)
            .map(|(&c, &q)| {
                let (p, q) = ((c as f64 / n as f64).max(PSI_FLOOR), q.max(PSI_FLOOR));
                (p - q) * (p / q).ln()
            })
            .sum()
    }
}

/// A PSI test on a stream of class-score vectors: the first `window` of them are the
/// reference (per class, `bins` quantile bins of their scores), then each tumbling window
/// of `window` is compared with it.
///
/// A checkpoint is checked as it is read (`try_from`): counts, bins and references that do
/// not fit one another index out of bounds in [`PsiTest::push`], so one that does not fit is
/// an error there, and its partition's detectors start over (`label_free.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "Unchecked")]
pub struct PsiTest {
    /// Per class, the reference bins; empty while the first window fills.
    reference: Vec<ScoreBins>,
    /// Per class, the first window's scores (until the reference is made).
    first: Vec<Vec<f64>>,
    /// Per class and bin, the current window's counts.
    counts: Vec<Vec<u64>>,
    /// Predictions in the current window.
    filled: usize,
    /// Predictions since the test (re)started, the reference included.
    seen: u64,
}

/// A [`PsiTest`] as read, before [`PsiTest::check`].
#[derive(Deserialize)]
struct Unchecked {
    reference: Vec<ScoreBins>,
    first: Vec<Vec<f64>>,
    counts: Vec<Vec<u64>>,
    filled: usize,
    seen: u64,
}

impl TryFrom<Unchecked> for PsiTest {
    type Error = String;

    fn try_from(u: Unchecked) -> Result<Self, String> {
        let t = PsiTest {
            reference: u.reference,
            first: u.first,
            counts: u.counts,
            filled: u.filled,
            seen: u.seen,
        };
        t.check()?;
        Ok(t)
    }
}

impl PsiTest {
    /// What [`push`](Self::push) indexes by: one window of first scores per class while there
    /// is no reference; after, per class, one count per bin of its reference (one more than
    /// its edges).
    fn check(&self) -> Result<(), String> {
        if self.reference.is_empty() {
            if self.first.is_empty() {
                return Err("PSI test: no reference and no classes".into());
            }
            return Ok(());
        }
        if self.counts.len() != self.reference.len() {
            return Err(format!(
                "PSI test: {} classes of counts for {} of reference",
                self.counts.len(),
                self.reference.len()
            ));
        }
        for (class, (r, c)) in self.reference.iter().zip(&self.counts).enumerate() {
            let bins = r.edges.len() + 1;
            if r.shares.len() != bins || c.len() != bins {
                return Err(format!(
                    "PSI test, class {class}: {} edges, {} shares, {} counts",
                    r.edges.len(),
                    r.shares.len(),
                    c.len()
                ));
            }
        }
        Ok(())
    }

    pub fn new(classes: usize) -> Self {
        PsiTest {
            reference: Vec::new(),
            first: vec![Vec::new(); classes],
            counts: Vec::new(),
            filled: 0,
            seen: 0,
        }
    }

    /// The classes it bins.
    pub fn classes(&self) -> usize {
        self.reference.len().max(self.first.len())
    }

    /// Predictions since it started, the reference window included.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Adds one prediction's class scores (finite, one per class); returns the largest PSI
    /// over the classes when the prediction closes a window (not the reference's).
    pub fn push(&mut self, scores: &[f64], window: usize, bins: usize) -> Option<f64> {
        self.seen += 1;
        if self.reference.is_empty() {
            for (v, &s) in self.first.iter_mut().zip(scores) {
                v.push(s);
            }
            if self.first[0].len() == window {
                let first = std::mem::take(&mut self.first);
                self.reference = first
                    .iter()
                    .map(|v| ScoreBins::of(v, bins).expect("a window of finite scores"))
                    .collect();
                self.counts = self
                    .reference
                    .iter()
                    .map(|r| vec![0; r.shares.len()])
                    .collect();
            }
            return None;
        }
        for ((r, c), &s) in self.reference.iter().zip(&mut self.counts).zip(scores) {
            c[r.bin(s)] += 1;
        }
        self.filled += 1;
        if self.filled < window {
            return None;
        }
        let psi = self
            .reference
            .iter()
            .zip(&self.counts)
            .map(|(r, c)| r.psi(c))
            .fold(0.0, f64::max);
        self.filled = 0;
        self.counts.iter_mut().for_each(|c| c.fill(0));
        Some(psi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psi_matches_a_hand_computation() {
        let r = ScoreBins {
            edges: vec![0.0],
            shares: vec![0.5, 0.5],
        };
        // p = (1/4, 3/4), q = (1/2, 1/2):
        // (0.25 - 0.5) ln(0.5) + (0.75 - 0.5) ln(1.5) = 0.25 ln 2 + 0.25 ln 1.5 = 0.2746531
        assert!((r.psi(&[1, 3]) - 0.274_653_072).abs() < 1e-8);
        assert_eq!(r.psi(&[5, 5]), 0.0);
        // An empty bin counts as 1e-4: (1e-4 - 0.5) ln(2e-4) + (1 - 0.5) ln(2) = 4.6043...
        let hand = (1e-4 - 0.5) * (1e-4f64 / 0.5).ln() + 0.5 * 2f64.ln();
        assert!((r.psi(&[0, 7]) - hand).abs() < 1e-12);
        assert!((hand - 4.604_32).abs() < 1e-4);
    }

    #[test]
    fn a_psi_test_takes_its_first_window_as_the_reference_then_tumbles() {
        let mut t = PsiTest::new(1);
        let same: Vec<Option<f64>> = (0..20)
            .map(|i| t.push(&[f64::from(i % 10)], 10, 2))
            .collect();
        // The reference window, then one window of the same values: PSI 0 at its end only.
        assert!(same[..19].iter().all(Option::is_none));
        assert_eq!(same[19], Some(0.0));
        // A window all in the upper bin: (1 - 0.5) ln 2 + (1e-4 - 0.5) ln(2e-4).
        let shifted: Vec<Option<f64>> = (0..10).map(|_| t.push(&[9.0], 10, 2)).collect();
        let hand = 0.5 * 2f64.ln() + (1e-4 - 0.5) * (2e-4f64).ln();
        assert!((shifted[9].unwrap() - hand).abs() < 1e-12);
        assert_eq!((t.seen(), t.classes()), (30, 1));
    }

    /// A checkpoint whose counts are shorter than its reference's bins indexed out of bounds
    /// in `push` (a panic on the scoring path at every prediction): it is an error as read.
    #[test]
    fn a_checkpoint_whose_counts_do_not_fit_its_bins_is_rejected() {
        let mut t = PsiTest::new(1);
        for i in 0..10 {
            t.push(&[f64::from(i)], 10, 4);
        }
        let good = serde_json::to_string(&t).unwrap();
        let back: PsiTest = serde_json::from_str(&good).unwrap();
        assert_eq!(back.counts, t.counts);
        let short = good.replace("\"counts\":[[0,0,0,0]]", "\"counts\":[[0]]");
        assert_ne!(short, good, "{good}");
        let e = serde_json::from_str::<PsiTest>(&short).unwrap_err();
        assert!(e.to_string().contains("1 counts"), "{e}");
        let no_class = r#"{"reference":[],"first":[],"counts":[],"filled":0,"seen":0}"#;
        assert!(serde_json::from_str::<PsiTest>(no_class).is_err());
    }

    #[test]
    fn quantile_bins_split_a_sample_evenly_and_keep_ties_together() {
        let sample: Vec<f64> = (0..100).map(f64::from).collect();
        let r = ScoreBins::of(&sample, 10).unwrap();
        assert_eq!(r.edges.len(), 9);
        assert!((r.edges[0] - 9.9).abs() < 1e-12);
        assert!(r.shares.iter().all(|s| (s - 0.1).abs() < 1e-12));
        assert_eq!(r.bin(-1.0), 0);
        assert_eq!(r.bin(1e9), 9);
        // The reference against itself: no shift.
        let counts: Vec<u64> = r
            .shares
            .iter()
            .map(|s| (s * 100.0).round() as u64)
            .collect();
        assert!(r.psi(&counts).abs() < 1e-12);
        // Half the sample tied at one value: its bins are empty, one bin holds the ties.
        let tied: Vec<f64> = (0..100)
            .map(|i| if i < 50 { 0.0 } else { f64::from(i) })
            .collect();
        let r = ScoreBins::of(&tied, 10).unwrap();
        assert!((r.shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((r.shares[r.bin(0.0)] - 0.5).abs() < 1e-12);
        assert!(ScoreBins::of(&[f64::NAN], 10).is_none());
    }
}
