//! Which hypothesis spaces a boosting round prices. Every space offers its best column of
//! each kind (the one-hot start, `weak::best_mean`, `stump::best_threshold`), and pricing
//! them all is most of a round's cost where spaces are many (12 channels: 108 spaces).
//! Partial pricing, the simplex's and column generation's device: most rounds price only
//! the spaces that led the last full pricing; a full pricing comes every few rounds, and at
//! once whenever the focus offers no column above gamma. So boosting still stops only where
//! no space has a column above gamma (Algorithm 1's rule), and the master LP's optimum is
//! the same; the path to it, and so the model, may differ. The max-aggregated kernel
//! hypothesis (the one-hot start, and the DC loop when on) comes from the `dc_spaces` spaces
//! of best one-hot edge (`weak::dc_candidates`). That ranking reads every space's table, so
//! it too is made at full pricings only; a focus round offers, priced afresh, the column of
//! the space that ranked first then. On 12 channels the fit is 0.8x, the accuracy over 26
//! sets at seeds 0-2 level (docs/VARIANTS.md, stop 64); ranking over the focus alone lost.

use serde::{Deserialize, Serialize};

/// How often every space is priced, and how many lead in between.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PartialPricing {
    /// A full pricing every this many rounds (the first round's is one).
    pub every: usize,
    /// The focus between full pricings: this share of the spaces, those of the best gain
    /// at the last full pricing ...
    pub share: f64,
    /// ... and at least this many. With no more spaces than this, every round is full.
    pub least: usize,
}

impl Default for PartialPricing {
    /// Measured on the development sets and 19 variant draws (docs/VARIANTS.md): the
    /// 12-channel frames fit 20 % faster at the same accuracy (41 fits' mean 0.8611 full,
    /// 0.8600 at these values); sparser pricing (every 16th round, a tenth of the spaces)
    /// lost 0.03 there.
    fn default() -> Self {
        Self {
            every: 4,
            share: 0.25,
            least: 8,
        }
    }
}

/// One boosting problem's pricing across its rounds.
#[derive(Debug, Clone)]
pub(crate) struct Focus {
    plan: Option<PartialPricing>,
    spaces: Vec<usize>,
    since_full: usize,
}

impl Focus {
    /// `None`: every round prices every space.
    pub fn new(plan: Option<PartialPricing>) -> Self {
        Self {
            plan,
            spaces: Vec::new(),
            since_full: 0,
        }
    }

    /// Prices one round over `n` spaces. `offer(want)` prices the spaces flagged in `want`
    /// and returns, for each of them, its best gain over the columns it may offer (an
    /// edge; a threshold's less its share price). A round that priced only the focus and
    /// found no gain above `bar` (gamma + epsilon) prices the others too. Returns whether
    /// the round priced every space.
    pub fn price(
        &mut self,
        n: usize,
        bar: f64,
        mut offer: impl FnMut(&[bool], bool) -> Vec<(usize, f64)>,
    ) -> bool {
        let mut gains = vec![f64::NEG_INFINITY; n];
        let mut priced = vec![false; n];
        let mut full = match self.plan {
            None => true,
            Some(p) => n <= p.least || self.spaces.is_empty() || self.since_full + 1 >= p.every,
        };
        loop {
            let want: Vec<bool> = (0..n)
                .map(|s| !priced[s] && (full || self.spaces.contains(&s)))
                .collect();
            for (s, g) in offer(&want, full) {
                gains[s] = g;
            }
            want.iter().zip(&mut priced).for_each(|(w, p)| *p |= w);
            if full || gains.iter().any(|&g| g > bar) {
                break;
            }
            full = true;
        }
        match self.plan {
            Some(p) if full => {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| gains[b].total_cmp(&gains[a]));
                order.truncate(((n as f64 * p.share).ceil() as usize).max(p.least));
                self.spaces = order;
                self.since_full = 0;
            }
            _ => self.since_full += 1,
        }
        full
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prices with fixed gains per space, recording which spaces each call priced.
    fn run(focus: &mut Focus, gains: &[f64], bar: f64, calls: &mut Vec<Vec<usize>>) -> bool {
        focus.price(gains.len(), bar, |want, _| {
            let s: Vec<usize> = (0..gains.len()).filter(|&s| want[s]).collect();
            calls.push(s.clone());
            s.into_iter().map(|s| (s, gains[s])).collect()
        })
    }

    #[test]
    fn the_focus_is_priced_between_full_rounds_and_the_rest_when_it_has_nothing() {
        let plan = PartialPricing {
            every: 3,
            share: 0.2,
            least: 2,
        };
        let mut focus = Focus::new(Some(plan));
        let gains: Vec<f64> = (0..20)
            .map(|s| {
                if s == 7 || s == 11 {
                    0.5
                } else {
                    0.1 * (s % 3) as f64
                }
            })
            .collect();
        let mut calls = Vec::new();
        // Round 1 is full; the focus is then the 4 best spaces (a fifth of 20), 7 and 11 first.
        assert!(run(&mut focus, &gains, 0.3, &mut calls));
        assert_eq!(calls.pop().unwrap().len(), 20);
        // Rounds 2 and 3 price the focus alone: it has a gain above the bar.
        for _ in 0..2 {
            assert!(!run(&mut focus, &gains, 0.3, &mut calls));
            let s = calls.pop().unwrap();
            assert_eq!(s.len(), 4);
            assert!(s.contains(&7) && s.contains(&11), "{s:?}");
        }
        // Round 4 is full again (every third round).
        assert!(run(&mut focus, &gains, 0.3, &mut calls));
        assert_eq!(calls.pop().unwrap().len(), 20);
        // With nothing above the bar in the focus, the same round prices the other 16: a
        // round that would stop boosting has seen every space.
        assert!(run(&mut focus, &gains, 0.6, &mut calls));
        let second = calls.pop().unwrap();
        let first = calls.pop().unwrap();
        assert_eq!((first.len(), second.len()), (4, 16));
        assert!(first.iter().all(|s| !second.contains(s)));
    }

    /// The offer learns which call completes a full pricing (where the max hypothesis's
    /// spaces are ranked): the first round's, every `every`-th, and a focus round's second call.
    #[test]
    fn the_offer_is_told_when_its_call_completes_a_full_pricing() {
        let plan = PartialPricing {
            every: 2,
            share: 0.25,
            least: 1,
        };
        let mut focus = Focus::new(Some(plan));
        let gains: Vec<f64> = (0..8).map(|s| s as f64 / 10.0).collect();
        let mut told = Vec::new();
        for bar in [0.0, 0.0, 0.0, 0.9] {
            focus.price(gains.len(), bar, |want, full| {
                told.push((want.iter().filter(|w| **w).count(), full));
                (0..gains.len())
                    .filter(|&s| want[s])
                    .map(|s| (s, gains[s]))
                    .collect()
            });
        }
        // Full (8), focus (2), full (8), then a focus with nothing above 0.9 and the other 6.
        assert_eq!(
            told,
            [(8, true), (2, false), (8, true), (2, false), (6, true)]
        );
    }

    #[test]
    fn without_a_plan_or_with_few_spaces_every_round_is_full() {
        let gains = [0.5, 0.1, 0.2];
        let mut calls = Vec::new();
        for plan in [None, Some(PartialPricing::default())] {
            let mut focus = Focus::new(plan);
            for _ in 0..5 {
                assert!(run(&mut focus, &gains, 0.0, &mut calls));
                assert_eq!(calls.pop().unwrap().len(), 3);
            }
        }
    }
}
