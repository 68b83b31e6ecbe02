//! How a series becomes the instances of one hypothesis space (beyond the paper, which
//! takes raw contiguous subsequences of one length; issue 12).
//!
//! A space reads a subsequence of `length` values from a *view* of the series (the series
//! itself or its first difference), taking every `dilation`-th point (RDST's device: a wider
//! receptive field without longer vectors), optionally z-normalised (offset and scale
//! invariance, the shapelet literature's standard). The hypothesis class is the union of the
//! spaces; LPBoost picks the largest edge among them, so Algorithm 1 is unchanged.
//!
//! Offsets are in points of the raw series: the subsequence at offset `p` reads points
//! `p .. p + footprint`. A series shorter than a footprint still has one subsequence, read
//! with its last point repeated, so no space depends on the shortest training series.

pub mod kernel;
pub mod kernel_table;
pub mod kmeans;
pub mod prepare;
pub mod series;

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::mil::space::kernel::{Kernel, RepBlocks, LANES};

/// The series a space reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// The series as it comes (the paper's).
    #[default]
    Raw,
    /// The first difference x[t+1] - x[t]: shape of the changes, free of the level.
    Diff,
    /// The series, each subsequence less its own mean: free of the level, keeping the
    /// scale (what a zero-sum convolution kernel sees, MiniRocket's; z-normalising it
    /// gives the raw view's z space, so it is taken raw only). A long cycle's amplitude
    /// at a dilation, where the first difference is mostly noise.
    Centred,
    /// The difference over the dilation, x[t+d] - x[t] (MiniRocket's kernels span the
    /// dilation the same way): free of the level like `Diff`, but at d > 1 a change over d
    /// steps, which stays above the noise on long slow cycles where a lag-1 change does not.
    /// At d = 1 it is `Diff`.
    Lag,
}

impl View {
    pub fn name(self) -> &'static str {
        match self {
            View::Raw => "raw",
            View::Diff => "diff",
            View::Centred => "centred",
            View::Lag => "lag",
        }
    }

    /// Points past a subsequence's last sampled point that its values read: 1 for the
    /// first difference, the dilation for the lagged one.
    pub fn reach(self, dilation: usize) -> usize {
        match self {
            View::Raw | View::Centred => 0,
            View::Diff => 1,
            View::Lag => dilation.max(1),
        }
    }
}

/// How a multichannel series forms hypothesis spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelMode {
    /// One space per channel: the union class, as several lengths are (LPBoost takes the
    /// largest edge), so each hypothesis reads one channel.
    #[default]
    Independent,
    /// One space over all channels: an instance is the channels x length block of the same
    /// steps, one kernel over all of it.
    Dependent,
}

impl ChannelMode {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The extraction of one space: view, length, dilation and normalisation; for a
/// multichannel series also the channel it reads, or the block of all channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Extraction {
    pub view: View,
    pub length: usize,
    pub dilation: usize,
    pub znorm: bool,
    /// The channel read by an independent space (0 for univariate series).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub channel: usize,
    /// A dependent space's channel count: an instance is the `block` x `length` values of
    /// all channels over the same steps, channel by channel (0: one channel).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub block: usize,
    /// The unit the space reads its channel's values in, as a power of two's exponent:
    /// every value is divided by 2^unit_exp (exact) before the view's differences and
    /// normalisation. A z space takes its channel's unit (mean |x| over the training series,
    /// the nearest power of two), so its flat floor reads the same data in any unit alike;
    /// another space only a unit beyond 2^+-[`UNIT_LIMIT`], where the squares of its values
    /// would leave f64's range (`prepare::with_unit`). 0 (unit 1) otherwise and in artifacts
    /// from before, which read their values as they were.
    #[serde(default, skip_serializing_if = "is_default")]
    pub unit_exp: i32,
}

pub fn is_zero(v: &usize) -> bool {
    *v == 0
}

/// Whether a field holds its type's default (serde leaves such fields out of artifacts).
pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl fmt::Display for Extraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_level() {
            write!(f, "level")?;
            if self.block > 0 {
                write!(f, " of all {} channels", self.block)?;
            }
            return Ok(());
        }
        write!(f, "{} l={}", self.view.name(), self.length)?;
        if self.dilation > 1 {
            write!(f, " d={}", self.dilation)?;
        }
        if self.znorm {
            write!(f, " z")?;
        }
        if self.block > 0 {
            write!(f, " all {} channels", self.block)?;
        }
        Ok(())
    }
}

/// Deviation below which a subsequence counts as flat and z-normalises to zeros, relative to
/// its level plus one (its channel's unit, as a z space reads it: see
/// [`Extraction::unit_exp`]): a flat stretch at any offset is flat, and rounding noise is
/// flat in any unit.
const FLAT: f64 = 1e-8;

/// A channel's unit past which every space reads its values in it (2^64: the squares of
/// the values stay within 2^+-128 of 1, f64's range is 2^+-1022).
pub const UNIT_LIMIT: i32 = 64;

/// The magnitude 2^`unit_exp`: a power of two, built from its exponent bits (the
/// extraction's hot path; normal range, clamped).
#[inline]
pub fn unit(unit_exp: i32) -> f64 {
    f64::from_bits(((unit_exp.clamp(-1022, 1023) + 1023) as u64) << 52)
}

/// z-normalises `x` in place: (x - mean) / std, or zeros for a flat subsequence (deviation
/// at most `FLAT` x (1 + |mean|)). The one implementation both the offline and the
/// incremental scorer call, so their values agree bit for bit. A power of two's scaling
/// of `x` changes no bit of the result, and scales the floor's sides alike.
#[inline]
pub fn znormalize(x: &mut [f64]) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let std = var.sqrt();
    if std <= FLAT * (1.0 + mean.abs()) {
        x.iter_mut().for_each(|v| *v = 0.0);
    } else {
        let inv = 1.0 / std;
        x.iter_mut().for_each(|v| *v = (*v - mean) * inv);
    }
}

/// Subtracts the mean of `x` from each value (the centred view's normalisation). The one
/// implementation beside [`centre_lanes`], which gives the same bits.
#[inline]
pub fn centre(x: &mut [f64]) {
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    x.iter_mut().for_each(|v| *v -= mean);
}

/// [`centre`] of `LANES` subsequences of `len` values side by side (as
/// [`znormalize_lanes`]): each lane the same operations in the same order.
#[inline(always)]
fn centre_lanes(x: &mut [f64], len: usize) {
    let n = len as f64;
    let x = &mut x[..len * LANES];
    let mut mean = [-0.0f64; LANES];
    for c in x.chunks_exact(LANES) {
        for (m, &v) in mean.iter_mut().zip(c) {
            *m += v;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n);
    for c in x.chunks_exact_mut(LANES) {
        for (v, &m) in c.iter_mut().zip(&mean) {
            *v -= m;
        }
    }
}

/// [`znormalize`] of `LANES` subsequences of `len` values side by side (value i of lane j
/// at `i * LANES + j`): each lane the same operations in the same order (the sums fold
/// from -0.0 as `Iterator::sum` does), so the bits of `znormalize` on its own subsequence.
#[inline(always)]
fn znormalize_lanes(x: &mut [f64], len: usize) {
    let n = len as f64;
    let x = &mut x[..len * LANES];
    let mut mean = [-0.0f64; LANES];
    for c in x.chunks_exact(LANES) {
        for (m, &v) in mean.iter_mut().zip(c) {
            *m += v;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut var = [-0.0f64; LANES];
    for c in x.chunks_exact(LANES) {
        for ((s, &v), &m) in var.iter_mut().zip(c).zip(&mean) {
            *s += (v - m) * (v - m);
        }
    }
    let mut inv = [0.0f64; LANES];
    let mut flat = [false; LANES];
    for j in 0..LANES {
        let std = (var[j] / n).sqrt();
        flat[j] = std <= FLAT * (1.0 + mean[j].abs());
        inv[j] = 1.0 / std;
    }
    for c in x.chunks_exact_mut(LANES) {
        for j in 0..LANES {
            c[j] = if flat[j] {
                0.0
            } else {
                (c[j] - mean[j]) * inv[j]
            };
        }
    }
}

impl Extraction {
    /// The paper's space: raw contiguous subsequences of `length`.
    pub fn raw(length: usize) -> Self {
        Self {
            view: View::Raw,
            length,
            dilation: 1,
            znorm: false,
            channel: 0,
            block: 0,
            unit_exp: 0,
        }
    }

    /// The level space of one channel: single raw points (see `SpaceParams::levels`).
    pub fn level() -> Self {
        Self::raw(1)
    }

    /// Whether this is a level space (of one channel, or in a dependent model of the
    /// block of all channels at one step).
    pub fn is_level(&self) -> bool {
        Self {
            channel: 0,
            block: 0,
            unit_exp: 0,
            ..*self
        } == Self::level()
    }

    /// Values of one instance: `length`, times the channels of a dependent space.
    pub fn dim(&self) -> usize {
        self.length * self.block.max(1)
    }

    /// The same extraction reading channel `c` of a multichannel series.
    pub fn on_channel(self, c: usize) -> Self {
        Self { channel: c, ..self }
    }

    /// Writes the instance at raw offset `p` of a series given by its channels into `out`
    /// (`dim()` values): channel `channel`, or the blocks of channels 0..block, each
    /// extracted (and z-normalised) on its own, so every channel keeps its own scale.
    #[inline]
    pub fn extract_channels(&self, channels: &[&[f64]], p: usize, out: &mut [f64]) {
        if self.block == 0 {
            self.extract(channels[self.channel], p, out);
        } else {
            for (c, o) in out.chunks_exact_mut(self.length).enumerate() {
                self.extract(channels[c], p, o);
            }
        }
    }

    /// The instances at raw offsets `p .. p + n` (n <= `LANES`) side by side, for
    /// [`gaussian_rows_lanes`](crate::mil::space::kernel::gaussian_rows_lanes): value d of the instance
    /// at `p + j` into `out[d * LANES + j]` (`dim() * LANES` values; lanes from `n` on are
    /// zeros). Each lane gets the values and operations [`extract_channels`]
    /// (Self::extract_channels) gives its instance, so its bits; every point they read
    /// must exist (no padding of a short series: the scorer's new subsequences).
    #[inline(always)]
    pub fn extract_lanes(&self, channels: &[&[f64]], p: usize, n: usize, out: &mut [f64]) {
        let out = &mut out[..self.dim() * LANES];
        if self.block == 0 {
            self.extract_lanes_of(channels[self.channel], p, n, out);
        } else {
            for (c, o) in out.chunks_exact_mut(self.length * LANES).enumerate() {
                self.extract_lanes_of(channels[c], p, n, o);
            }
        }
    }

    #[inline(always)]
    fn extract_lanes_of(&self, series: &[f64], p: usize, n: usize, out: &mut [f64]) {
        debug_assert!((1..=LANES).contains(&n));
        let d = self.dilation.max(1);
        // How far ahead each value's second point is: 0 for a level, 1 or d for a change.
        let reach = self.view.reach(d);
        // The last point the last lane reads: checked once, so the reads below are in bounds.
        let end = p + n + (self.length.max(1) - 1) * d + reach;
        let series = &series[..end];
        // Values in the space's unit: times 1 (the same bits) unless it has one.
        let s = unit(-self.unit_exp);
        for (i, o) in out.chunks_exact_mut(LANES).enumerate() {
            let q = p + i * d;
            if n == LANES {
                let a = &series[q..q + LANES];
                if reach > 0 {
                    let b = &series[q + reach..q + reach + LANES];
                    for (j, o) in o.iter_mut().enumerate() {
                        *o = b[j] * s - a[j] * s;
                    }
                } else {
                    for (o, a) in o.iter_mut().zip(a) {
                        *o = a * s;
                    }
                }
            } else {
                for (j, o) in o.iter_mut().enumerate() {
                    *o = if j >= n {
                        0.0
                    } else if reach > 0 {
                        series[q + j + reach] * s - series[q + j] * s
                    } else {
                        series[q + j] * s
                    };
                }
            }
        }
        if self.znorm {
            znormalize_lanes(out, self.length);
        } else if self.view == View::Centred {
            centre_lanes(out, self.length);
        }
    }

    /// Every instance of a series given by its channels at `stride`, row-major, appended
    /// to `out`; returns how many.
    pub fn extract_all_channels(
        &self,
        channels: &[&[f64]],
        stride: usize,
        out: &mut Vec<f64>,
    ) -> usize {
        let c = self.count(channels[0].len(), stride);
        let dim = self.dim();
        let start = out.len();
        out.resize(start + c * dim, 0.0);
        for j in 0..c {
            let o = start + j * dim;
            self.extract_channels(channels, j * stride.max(1), &mut out[o..o + dim]);
        }
        c
    }

    /// Raw points one subsequence spans.
    pub fn footprint(&self) -> usize {
        (self.length.max(1) - 1) * self.dilation.max(1) + 1 + self.view.reach(self.dilation)
    }

    /// Subsequence offsets of a series of `n` points, every `stride`-th: at least one.
    pub fn count(&self, n: usize, stride: usize) -> usize {
        let f = self.footprint();
        if n <= f {
            1
        } else {
            (n - f) / stride.max(1) + 1
        }
    }

    /// Writes the subsequence at raw offset `p` of `series` into `out` (`length` values).
    /// Points past the end read as the last point.
    #[inline]
    pub fn extract(&self, series: &[f64], p: usize, out: &mut [f64]) {
        debug_assert_eq!(out.len(), self.length);
        let last = series.len() - 1;
        // Values in the space's unit: times 1 (the same bits) unless it has one.
        let s = unit(-self.unit_exp);
        let at = |i: usize| series[i.min(last)] * s;
        let d = self.dilation.max(1);
        match self.view {
            View::Raw | View::Centred => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = at(p + i * d);
                }
            }
            View::Diff | View::Lag => {
                let reach = self.view.reach(d);
                for (i, o) in out.iter_mut().enumerate() {
                    let q = p + i * d;
                    *o = at(q + reach) - at(q);
                }
            }
        }
        if self.znorm {
            znormalize(out);
        } else if self.view == View::Centred {
            centre(out);
        }
    }

    /// Raw series positions the values of the subsequence at offset `p` sit on (for a
    /// difference, the point the change leads to), clamped to a series of `n` points.
    pub fn positions(&self, p: usize, n: usize) -> Vec<usize> {
        let shift = self.view.reach(self.dilation);
        (0..self.length)
            .map(|i| (p + i * self.dilation.max(1) + shift).min(n.saturating_sub(1)))
            .collect()
    }

    /// Every subsequence of `series` at `stride`, row-major, appended to `out`; returns how
    /// many.
    pub fn extract_all(&self, series: &[f64], stride: usize, out: &mut Vec<f64>) -> usize {
        let c = self.count(series.len(), stride);
        let start = out.len();
        out.resize(start + c * self.length, 0.0);
        for j in 0..c {
            let o = start + j * self.length;
            self.extract(series, j * stride.max(1), &mut out[o..o + self.length]);
        }
        c
    }
}

/// Dilations 1, 2, 4, ... whose footprint at `length` fits in `n` points.
pub fn dilations(length: usize, n: usize, max_count: usize) -> Vec<usize> {
    let mut out = vec![1];
    let mut d = 2;
    while out.len() < max_count && (length - 1) * d + 2 <= n {
        out.push(d);
        d *= 2;
    }
    out
}

/// One shapelet space: instances of one dimension (for series: subsequences of one length,
/// view, dilation and normalisation), its kernel, and the representatives \hat P_S that
/// hypotheses are expanded over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeletSpace {
    /// Instance dimension: the subsequence length l for series.
    pub length: usize,
    pub kernel: Kernel,
    /// Number of representatives (rows of `representatives`).
    pub count: usize,
    /// Row-major count x length.
    pub representatives: Vec<f64>,
    /// How a series is read (absent in artifacts from before: the paper's raw form).
    #[serde(default)]
    pub view: View,
    #[serde(default = "one")]
    pub dilation: usize,
    #[serde(default)]
    pub znorm: bool,
    /// The channel an independent space reads (0 for univariate series; absent before).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub channel: usize,
    /// A dependent space's channel count: representatives are `block` x `length` (0: one
    /// channel).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub block: usize,
    /// A z space's unit (see [`Extraction::unit_exp`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub unit_exp: i32,
    /// The representatives laid out for [`Kernel::row_blocked`], made on first use (the
    /// representatives do not change after a fit).
    #[serde(skip)]
    pub blocked: BlockedReps,
}

/// A space's representatives in [`RepBlocks`] layout: derived data, so two spaces compare
/// equal whatever their caches hold.
#[derive(Debug, Clone, Default)]
pub struct BlockedReps(OnceLock<RepBlocks>);

impl PartialEq for BlockedReps {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

fn one() -> usize {
    1
}

impl ShapeletSpace {
    /// The representatives laid out for [`Kernel::row_blocked`].
    pub fn blocks(&self) -> &RepBlocks {
        self.blocked
            .0
            .get_or_init(|| RepBlocks::new(&self.representatives, self.extraction().dim()))
    }

    /// K(z, x) for every representative z into `out`.
    pub fn kernel_row(&self, x: &[f64], out: &mut [f64]) {
        self.kernel.row_blocked(x, self.blocks(), out)
    }

    /// How this space reads a series.
    pub fn extraction(&self) -> Extraction {
        Extraction {
            view: self.view,
            length: self.length,
            dilation: self.dilation,
            znorm: self.znorm,
            channel: self.channel,
            block: self.block,
            unit_exp: self.unit_exp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_unit_is_its_power_of_two() {
        for e in [-1022, -40, -1, 0, 1, 30, 1023] {
            assert_eq!(unit(e), 2f64.powi(e));
        }
    }

    #[test]
    fn a_space_reads_its_values_in_its_unit() {
        // The series times 2^e read in the unit 2^e: the bits of the series read in unit 1,
        // in every view, at magnitudes whose squares are past f64's range.
        let a: Vec<f64> = (0..60)
            .map(|t| (t as f64 * 0.37).sin() + 0.01 * t as f64)
            .collect();
        for e in [-900, -(UNIT_LIMIT + 1), 70, 800] {
            let far: Vec<f64> = a.iter().map(|v| v * unit(e)).collect();
            for view in [View::Raw, View::Diff, View::Centred, View::Lag] {
                for znorm in [false, true] {
                    let plain = Extraction {
                        view,
                        length: 9,
                        dilation: 2,
                        znorm,
                        channel: 0,
                        block: 0,
                        unit_exp: 0,
                    };
                    let read = Extraction {
                        unit_exp: e,
                        ..plain
                    };
                    let (mut want, mut got) = (vec![0.0; 9], vec![0.0; 9]);
                    for p in [0, 17, 55] {
                        plain.extract(&a, p, &mut want);
                        read.extract(&far, p, &mut got);
                        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&got), bits(&want), "{read} at 2^{e}, offset {p}");
                    }
                }
            }
        }
    }

    #[test]
    fn footprints_and_offsets() {
        let e = Extraction {
            view: View::Raw,
            length: 3,
            dilation: 2,
            znorm: false,
            channel: 0,
            block: 0,
            unit_exp: 0,
        };
        assert_eq!(e.footprint(), 5);
        let s: Vec<f64> = (0..8).map(f64::from).collect();
        let mut out = vec![0.0; 3];
        e.extract(&s, 1, &mut out);
        assert_eq!(out, vec![1.0, 3.0, 5.0]);
        assert_eq!(e.count(8, 1), 4);
        let d = Extraction {
            view: View::Diff,
            ..e
        };
        assert_eq!(d.footprint(), 6);
        let sq: Vec<f64> = (0..8).map(|i| f64::from(i * i)).collect();
        d.extract(&sq, 0, &mut out);
        assert_eq!(out, vec![1.0, 5.0, 9.0]);
        assert_eq!(d.positions(0, 8), vec![1, 3, 5]);
        // The lagged difference spans the dilation: x[t+2] - x[t] at t = 0, 2, 4.
        let lag = Extraction {
            view: View::Lag,
            ..e
        };
        assert_eq!(lag.footprint(), 7);
        lag.extract(&sq, 0, &mut out);
        assert_eq!(out, vec![4.0, 12.0, 20.0]);
        assert_eq!(lag.positions(0, 8), vec![2, 4, 6]);
        assert_eq!(lag.count(8, 1), 2);
        // At dilation 1 it is the first difference.
        let (lag1, diff1) = (
            Extraction { dilation: 1, ..lag },
            Extraction { dilation: 1, ..d },
        );
        let mut other = vec![0.0; 3];
        lag1.extract(&sq, 2, &mut out);
        diff1.extract(&sq, 2, &mut other);
        assert_eq!(out, other);
        // Shorter than the footprint: one subsequence, the last point repeated.
        assert_eq!(e.count(3, 1), 1);
        e.extract(&[1.0, 2.0, 3.0], 0, &mut out);
        assert_eq!(out, vec![1.0, 3.0, 3.0]);
        // A dependent space reads every channel at the same offsets.
        let both = Extraction { block: 2, ..e };
        let t: Vec<f64> = (10..18).map(f64::from).collect();
        let mut block = vec![0.0; 6];
        both.extract_channels(&[&s, &t], 1, &mut block);
        assert_eq!(block, vec![1.0, 3.0, 5.0, 11.0, 13.0, 15.0]);
        e.on_channel(1).extract_channels(&[&s, &t], 1, &mut out);
        assert_eq!(out, vec![11.0, 13.0, 15.0]);
    }

    /// Subsequences side by side (full and partly filled lanes, each view, dilation and
    /// normalisation, flat stretches, a dependent space): every lane holds the bits
    /// `extract_channels` gives its subsequence.
    #[test]
    fn lanes_hold_the_bits_of_each_extraction() {
        let a: Vec<f64> = (0..200)
            .map(|t| {
                if (40..70).contains(&t) {
                    3.25
                } else {
                    (t as f64 * 0.37).sin() * 1e3
                }
            })
            .collect();
        let b: Vec<f64> = (0..200).map(|t| (t as f64 * 0.11).cos() - 7.0).collect();
        let channels: [&[f64]; 2] = [&a, &b];
        for view in [View::Raw, View::Diff, View::Centred, View::Lag] {
            for znorm in [false, true] {
                for (length, dilation, channel, block) in [
                    (1, 1, 0, 0),
                    (5, 1, 0, 0),
                    (9, 4, 1, 0),
                    (8, 2, 0, 2),
                    (17, 1, 0, 0),
                ] {
                    let e = Extraction {
                        view,
                        length,
                        dilation,
                        znorm,
                        channel,
                        block,
                        // A unit off 1 in the z spaces (the lanes share the scalar's
                        // floor) and one past the limit in the others: the same reads.
                        unit_exp: if znorm {
                            3
                        } else {
                            -(UNIT_LIMIT + 1) * (length % 2) as i32
                        },
                    };
                    let dim = e.dim();
                    let mut lanes = vec![f64::NAN; dim * LANES];
                    let mut one = vec![0.0; dim];
                    for p in [0, 30, 37, 45, 60] {
                        for n in [1, 3, LANES] {
                            e.extract_lanes(&channels, p, n, &mut lanes);
                            for j in 0..LANES {
                                let got: Vec<u64> =
                                    (0..dim).map(|d| lanes[d * LANES + j].to_bits()).collect();
                                let want: Vec<u64> = if j < n {
                                    e.extract_channels(&channels, p + j, &mut one);
                                    one.iter().map(|v| v.to_bits()).collect()
                                } else {
                                    got.clone()
                                };
                                assert_eq!(got, want, "{e} at {p}, lane {j} of {n}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_constant_subsequence_normalises_to_zeros() {
        for level in [0.0, 1.0, -7.5, 1e6] {
            let mut x = vec![level; 9];
            znormalize(&mut x);
            assert!(x.iter().all(|&v| v == 0.0), "{level}: {x:?}");
        }
    }

    #[test]
    fn dilations_fit_the_series() {
        assert_eq!(dilations(9, 150, 8), vec![1, 2, 4, 8, 16]);
        assert_eq!(dilations(9, 10, 8), vec![1]);
        assert_eq!(dilations(9, 1460, 4), vec![1, 2, 4, 8]);
    }

    proptest! {
        /// Offset and scale invariance: a shifted and scaled copy normalises to the same
        /// vector, so it scores the same under any kernel.
        #[test]
        fn znorm_is_offset_and_scale_invariant(
            x in proptest::collection::vec(-100.0f64..100.0, 2..40),
            a in 0.01f64..100.0,
            b in -1000.0f64..1000.0,
        ) {
            let spread = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - x.iter().cloned().fold(f64::INFINITY, f64::min);
            prop_assume!(spread > 1e-3);
            let mut u = x.clone();
            let mut v: Vec<f64> = x.iter().map(|t| a * t + b).collect();
            znormalize(&mut u);
            znormalize(&mut v);
            for (p, q) in u.iter().zip(&v) {
                prop_assert!((p - q).abs() < 1e-6, "{u:?} vs {v:?}");
            }
            let mean: f64 = u.iter().sum::<f64>() / u.len() as f64;
            prop_assert!(mean.abs() < 1e-9);
        }

        /// The centred view forgets the level and keeps the scale: a shifted copy reads
        /// the same values, a scaled one the values scaled.
        #[test]
        fn the_centred_view_is_offset_invariant_and_keeps_the_scale(
            x in proptest::collection::vec(-100.0f64..100.0, 12..40),
            a in 0.01f64..100.0,
            b in -1000.0f64..1000.0,
        ) {
            let e = Extraction { view: View::Centred, length: 5, dilation: 2, znorm: false, channel: 0, block: 0, unit_exp: 0 };
            let y: Vec<f64> = x.iter().map(|t| a * t + b).collect();
            let (mut u, mut v) = (vec![0.0; 5], vec![0.0; 5]);
            e.extract(&x, 1, &mut u);
            e.extract(&y, 1, &mut v);
            for (p, q) in u.iter().zip(&v) {
                prop_assert!((a * p - q).abs() < 1e-6 * (1.0 + q.abs()) + 1e-9 * b.abs(), "{u:?} vs {v:?}");
            }
            let mean: f64 = u.iter().sum::<f64>() / 5.0;
            prop_assert!(mean.abs() < 1e-9);
        }
    }
}
