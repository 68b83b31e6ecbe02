//! ADWIN, adaptive windowing (Bifet & Gavaldà, "Learning from Time-Changing Data with
//! Adaptive Windowing", SDM 2007; the bucket compression of ADWIN2), as River 0.26's
//! `drift.ADWIN` (its `rust_src/adwin.rs`): the same arithmetic in the same order, so the
//! cut points match River's to the bit.

use serde::{Deserialize, Serialize};

use super::Signal;

/// River's defaults: `delta=0.002, clock=32, max_buckets=5, min_window_length=5,
/// grace_period=10`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdwinParams {
    /// Significance of the cut test.
    pub delta: f64,
    /// Test for a cut every `clock` values.
    pub clock: u64,
    /// Buckets of each size kept before two merge.
    pub max_buckets: usize,
    /// The smallest sub-window a cut may leave.
    pub min_window_length: u64,
    /// Values seen before the first test.
    pub grace_period: u64,
}

impl Default for AdwinParams {
    fn default() -> Self {
        AdwinParams {
            delta: 0.002,
            clock: 32,
            max_buckets: 5,
            min_window_length: 5,
            grace_period: 10,
        }
    }
}

/// One bucket: the sum of its 2^row values and their sum of squared deviations.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Bucket {
    total: f64,
    variance: f64,
}

/// A checkpoint is checked as it is read (`try_from`): rows that do not fit the parameters
/// index out of bounds in `compress` and `delete_oldest`, so they are an error there.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "Unchecked")]
pub struct Adwin {
    params: AdwinParams,
    /// `rows[i]` holds the buckets of 2^i values, oldest first; the last row is the oldest.
    rows: Vec<Vec<Bucket>>,
    total: f64,
    variance: f64,
    width: f64,
    tick: u64,
    drift: bool,
}

/// An [`Adwin`] as read, before [`Adwin::check`].
#[derive(Deserialize)]
struct Unchecked {
    params: AdwinParams,
    rows: Vec<Vec<Bucket>>,
    total: f64,
    variance: f64,
    width: f64,
    tick: u64,
    drift: bool,
}

impl TryFrom<Unchecked> for Adwin {
    type Error = String;

    fn try_from(u: Unchecked) -> Result<Self, String> {
        let a = Adwin {
            params: u.params,
            rows: u.rows,
            total: u.total,
            variance: u.variance,
            width: u.width,
            tick: u.tick,
            drift: u.drift,
        };
        a.check()?;
        Ok(a)
    }
}

impl Adwin {
    /// What `compress`, `delete_oldest` and `detect_change` index by: a first row; rows of at
    /// most `max_buckets` (>= 1) buckets, at most 63 of them (sizes 2^row fit a u64); a last
    /// row that is not empty unless it is the first; `clock` >= 1.
    fn check(&self) -> Result<(), String> {
        let (p, rows) = (&self.params, &self.rows);
        let bad = |why: String| Err(format!("ADWIN: {why}"));
        if p.max_buckets == 0 || p.clock == 0 {
            return bad(format!("max_buckets {} clock {}", p.max_buckets, p.clock));
        }
        if rows.is_empty() || rows.len() > 63 {
            return bad(format!("{} rows", rows.len()));
        }
        if let Some(i) = rows.iter().position(|r| r.len() > p.max_buckets) {
            return bad(format!("row {i} of {} buckets", rows[i].len()));
        }
        if rows.len() > 1 && rows[rows.len() - 1].is_empty() {
            return bad("an empty oldest row".into());
        }
        Ok(())
    }

    pub fn new(params: AdwinParams) -> Self {
        Adwin {
            params,
            rows: vec![Vec::with_capacity(params.max_buckets + 1)],
            total: 0.0,
            variance: 0.0,
            width: 0.0,
            tick: 0,
            drift: false,
        }
    }

    pub fn update(&mut self, x: f64) -> Signal {
        // River's wrapper starts a fresh window after reporting a drift.
        if self.drift {
            *self = Adwin::new(self.params);
        }
        self.insert(x);
        self.drift = self.detect_change();
        if self.drift {
            Signal::Drift
        } else {
            Signal::Stable
        }
    }

    pub fn params(&self) -> AdwinParams {
        self.params
    }

    /// The window's length.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Values seen since it (re)started.
    pub fn seen(&self) -> u64 {
        self.tick
    }

    /// The mean of the window.
    pub fn estimation(&self) -> f64 {
        if self.width == 0.0 {
            0.0
        } else {
            self.total / self.width
        }
    }

    fn insert(&mut self, x: f64) {
        self.rows[0].push(Bucket {
            total: x,
            variance: 0.0,
        });
        // Welford's update of the window's sum of squared deviations.
        self.width += 1.0;
        let mut increment = 0.0;
        if self.width > 1.0 {
            let d = x - self.total / (self.width - 1.0);
            increment = (self.width - 1.0) * d * d / self.width;
        }
        self.variance += increment;
        self.total += x;
        self.compress();
    }

    /// ADWIN2: a row holding max_buckets + 1 buckets merges its two oldest into the next row.
    fn compress(&mut self) {
        let full = self.params.max_buckets + 1;
        let mut i = 0;
        while self.rows[i].len() == full {
            let n1 = (1u64 << i) as f64;
            let (b0, b1) = (self.rows[i][0], self.rows[i][1]);
            let (mu1, mu2) = (b0.total / n1, b1.total / n1);
            let merged = Bucket {
                total: b0.total + b1.total,
                variance: b0.variance + b1.variance + n1 * 0.5 * (mu1 - mu2) * (mu1 - mu2),
            };
            if i + 1 == self.rows.len() {
                self.rows.push(Vec::with_capacity(full));
            }
            self.rows[i + 1].push(merged);
            self.rows[i].drain(..2);
            if self.rows[i + 1].len() <= self.params.max_buckets {
                break;
            }
            i += 1;
        }
    }

    /// Drops the oldest bucket.
    fn delete_oldest(&mut self) {
        let last = self.rows.len() - 1;
        let n = (1u64 << last) as f64;
        let b = self.rows[last][0];
        let mu = b.total / n;
        self.width -= n;
        self.total -= b.total;
        let mu_window = self.total / self.width;
        self.variance -=
            b.variance + n * self.width * (mu - mu_window) * (mu - mu_window) / (n + self.width);
        self.rows[last].remove(0);
        if self.rows[last].is_empty() && last > 0 {
            self.rows.pop();
        }
    }

    /// Every `clock` values: for each split of the window into old W0 and recent W1 (at bucket
    /// borders, oldest first), drop the oldest bucket while some split's means differ by more
    /// than the bound; repeat until none does.
    fn detect_change(&mut self) -> bool {
        let mut change = false;
        self.tick += 1;
        let p = self.params;
        let min_len = p.min_window_length as f64;
        if !self.tick.is_multiple_of(p.clock) || self.width <= p.grace_period as f64 {
            return false;
        }
        let mut cut = true;
        while cut {
            cut = false;
            let (mut n0, mut n1, mut u0, mut u1) = (0.0, self.width, 0.0, self.total);
            'rows: for i in (0..self.rows.len()).rev() {
                let size = (1u64 << i) as f64;
                let len = self.rows[i].len();
                for k in 0..len {
                    n0 += size;
                    n1 -= size;
                    let t = self.rows[i][k].total;
                    u0 += t;
                    u1 -= t;
                    if i == 0 && k == len - 1 {
                        break 'rows;
                    }
                    let delta_mean = (u0 / n0) - (u1 / n1);
                    if n1 >= min_len && n0 >= min_len && self.cut_holds(n0, n1, delta_mean) {
                        cut = true;
                        change = true;
                        if self.width > 0.0 {
                            self.delete_oldest();
                            break 'rows;
                        }
                    }
                }
            }
        }
        change
    }

    /// The cut bound of ADWIN's paper (Theorem 3.1's epsilon_cut with the variance term).
    fn cut_holds(&self, n0: f64, n1: f64, delta_mean: f64) -> bool {
        let min_len = self.params.min_window_length as f64;
        let delta_prime = (2.0 * self.width.ln() / self.params.delta).ln();
        let m_recip = 1.0 / (n0 - min_len + 1.0) + 1.0 / (n1 - min_len + 1.0);
        let epsilon = (2.0 * m_recip * (self.variance / self.width) * delta_prime).sqrt()
            + 2.0 / 3.0 * delta_prime * m_recip;
        delta_mean.abs() > epsilon
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_stream_never_drifts_and_a_jump_does() {
        let mut a = Adwin::new(AdwinParams::default());
        for _ in 0..5000 {
            assert_eq!(a.update(1.0), Signal::Stable);
        }
        assert_eq!(a.width(), 5000.0);
        let hit = (0..500).position(|_| a.update(100.0) == Signal::Drift);
        assert!(hit.is_some(), "a jump from 1 to 100 is a drift");
    }

    /// The warning level beside the drift detector (as River's ARF pairs them): on the same
    /// errors, ADWIN at delta 0.01 fires on a clock tick before ADWIN at the default 0.002
    /// (48 right then all wrong: at value 64 against 96, River's points too).
    #[test]
    fn a_larger_delta_fires_a_clock_tick_before_the_default() {
        let first = |delta: f64| {
            let mut a = Adwin::new(AdwinParams {
                delta,
                ..Default::default()
            });
            (1..=200).find(|&i| a.update(if i <= 48 { 0.0 } else { 1.0 }) == Signal::Drift)
        };
        assert_eq!(first(0.01), Some(64));
        assert_eq!(first(0.002), Some(96));
    }

    /// A checkpoint that round-trips is read back; one whose rows do not fit its parameters
    /// (it indexed out of bounds on the next value) is an error as read.
    #[test]
    fn a_checkpoint_whose_rows_do_not_fit_is_rejected() {
        let mut a = Adwin::new(AdwinParams::default());
        for i in 0..100 {
            a.update(f64::from(i % 2));
        }
        let good = serde_json::to_string(&a).unwrap();
        let no_rows = good.replace(&serde_json::to_string(&a.rows).unwrap(), "[]");
        assert!(
            serde_json::from_str::<Adwin>(&no_rows).is_err(),
            "{no_rows}"
        );
        let mut back: Adwin = serde_json::from_str(&good).unwrap();
        assert_eq!(back.update(1.0), a.update(1.0));
    }

    /// A restarted detector's estimation is the mean of what it saw since: the rate the
    /// daemon compares with the pre-warning rate to clear a warning.
    #[test]
    fn after_a_detection_it_restarts_on_the_next_value() {
        let mut a = Adwin::new(AdwinParams {
            delta: 0.01,
            ..Default::default()
        });
        let hit = (1..=200).find(|&i| a.update(if i <= 48 { 0.0 } else { 1.0 }) == Signal::Drift);
        assert_eq!(hit, Some(64));
        for _ in 0..10 {
            a.update(0.0);
        }
        assert_eq!((a.seen(), a.estimation()), (10, 0.0));
    }
}
