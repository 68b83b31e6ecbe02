//! The label-free part of a fit: lengths and spaces resolved, every space's training
//! instances and their k-means++ representatives (appendix A.3), and the kernel widths.
//! Cross-validation shares it across kernel widths and nu.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::mil::bag::{Dataset, InputKind, InstanceSet, Sample, Standardizer};
use crate::mil::error::{MilError, Result};
use crate::mil::params::{
    FitParams, KernelSpec, ShapeletLength, SpaceParams, WeakKind, WidthChoice, LEVEL_SCALE,
};
use crate::mil::space::kernel::{sq_dist, Kernel};
use crate::mil::space::kernel_table::KernelTable;
use crate::mil::space::kmeans::{kmeans_pp, kmeans_pp_with};
use crate::mil::space::series::instance_set;
use crate::mil::space::{unit, Extraction, View, UNIT_LIMIT};

/// Training instances of one space and their k-means representatives: the label-free part
/// of a fit, which cross-validation shares across kernel widths and nu.
pub struct PreparedSpace {
    /// For bags, a raw "subsequence" of the bag dimension.
    pub extraction: Extraction,
    /// The training instances; None after [`prepare_lean`], which keeps `tables` instead.
    pub instances: Option<InstanceSet>,
    /// Values per instance, and training instances in all.
    pub dim: usize,
    pub n_instances: usize,
    /// Kernel rows are kept for every `row_stride`-th instance of a bag (see
    /// [`KernelTable`]); 1 keeps them all.
    pub row_stride: usize,
    pub reps: Vec<f64>,
    /// After [`prepare_lean`]: per width of the fit ([`space_kernels`]), the space's kernel
    /// and its statistics table; empty otherwise.
    pub tables: Vec<(Kernel, KernelTable<'static>)>,
}

impl PreparedSpace {
    /// Its kernel and table at each width of the fit ([`space_kernels`]), from its
    /// instances; none after [`prepare_lean`], which built them already (`tables`).
    pub fn tables_at(
        &self,
        params: &FitParams,
        input: InputKind,
    ) -> Result<Vec<(Kernel, KernelTable<'_>)>> {
        let Some(set) = self.instances.as_ref().filter(|_| self.tables.is_empty()) else {
            return Ok(Vec::new());
        };
        // The kernel rows serve Algorithm 2's DC subproblems only: without a DC step the
        // table holds the bag statistics alone (which every hypothesis reads, exact).
        let gram_factor = params.weak == WeakKind::Op1;
        let kernels = resolved_kernels(set, params, input, &self.extraction)?;
        if params.dc_max_iters == 0 {
            let tables = KernelTable::statistics_at(set, &self.reps, &kernels, gram_factor)?;
            return Ok(kernels.into_iter().zip(tables).collect());
        }
        kernels
            .into_iter()
            .map(|kernel| {
                let table =
                    KernelTable::new(set, &self.reps, &kernel, gram_factor, self.row_stride)?;
                Ok((kernel, table))
            })
            .collect()
    }
}

/// A space's kernel at each width of the fit ([`space_kernels`]), resolved on its instances.
fn resolved_kernels(
    set: &InstanceSet,
    params: &FitParams,
    input: InputKind,
    e: &Extraction,
) -> Result<Vec<Kernel>> {
    space_kernels(params, input, e)
        .iter()
        .map(|spec| resolve_kernel(spec, set, params.seed))
        .collect()
}

/// The label-free preparation of a training set.
pub struct Prepared {
    pub input: InputKind,
    pub channel_names: Vec<String>,
    pub standardizer: Option<Standardizer>,
    pub spaces: Vec<PreparedSpace>,
}

impl Prepared {
    /// The preparation restricted to the training examples `examples` (their instances,
    /// or a lean preparation's tables), with the same representatives and standardizer:
    /// the inner folds of a width choice or a decision's place share the label-free part
    /// of the outer fit.
    pub fn subset(&self, examples: &[usize]) -> Prepared {
        Prepared {
            input: self.input,
            channel_names: self.channel_names.clone(),
            standardizer: self.standardizer.clone(),
            spaces: self
                .spaces
                .iter()
                .map(|s| {
                    let Some(instances) = s.instances.as_ref() else {
                        let tables: Vec<(Kernel, KernelTable<'static>)> = s
                            .tables
                            .iter()
                            .map(|(kernel, t)| (*kernel, t.bag_subset(examples)))
                            .collect();
                        let n_instances = tables.first().map_or(0, |(_, t)| t.n_instances());
                        return PreparedSpace {
                            extraction: s.extraction,
                            instances: None,
                            dim: s.dim,
                            n_instances,
                            row_stride: s.row_stride,
                            reps: s.reps.clone(),
                            tables,
                        };
                    };
                    let instances = instances.subset(examples);
                    PreparedSpace {
                        extraction: s.extraction,
                        dim: instances.dim,
                        n_instances: instances.n_instances(),
                        instances: Some(instances),
                        row_stride: s.row_stride,
                        reps: s.reps.clone(),
                        tables: Vec::new(),
                    }
                })
                .collect(),
        }
    }
}

/// Absolute shapelet lengths for series of `min_len` to `max_len` points. A fraction is of the
/// shortest series (at least 2); no length exceeds the longest series, and a series shorter
/// than a length is read with its last point repeated (space.rs), so short series never stop
/// a fit (issue 26: a set of 7-to-29-point series with the default length 9).
pub fn resolve_lengths(
    lengths: &[ShapeletLength],
    min_len: usize,
    max_len: usize,
) -> Result<Vec<usize>> {
    if lengths.is_empty() {
        return Err(MilError::InvalidParameter(
            "no shapelet length given".into(),
        ));
    }
    let mut out = Vec::new();
    for l in lengths {
        let abs = match *l {
            ShapeletLength::Absolute(a) => a,
            ShapeletLength::Fraction(f) => ((f * min_len as f64).round() as usize).max(2),
        };
        if abs == 0 {
            return Err(MilError::InvalidParameter(format!(
                "shapelet length {l} resolves to 0"
            )));
        }
        let abs = abs.min(max_len.max(1));
        if !out.contains(&abs) {
            out.push(abs);
        }
    }
    Ok(out)
}

/// Resolves lengths and spaces, standardises bag features, builds every space's instances
/// and runs k-means++ (appendix A.3). Seeded by `params.seed`.
pub fn prepare(ds: &Dataset, params: &FitParams) -> Result<Prepared> {
    prepare_with(ds, params, false)
}

/// [`prepare`] for one fit at `params` with no DC step: each space's kernels and statistics
/// tables are built as soon as its representatives are drawn, and its instances dropped.
/// The instances (n x subsequences x length values a space, for every space of every
/// channel) were most of a fit's memory; the tables are n x k a space. The same tables, so
/// the same model, as [`prepare`] and a fit.
pub fn prepare_lean(ds: &Dataset, params: &FitParams) -> Result<Prepared> {
    prepare_with(ds, params, true)
}

/// The kernels a space is fitted at: `params.kernel`, or each width of
/// [`WidthChoice::Spaces`](crate::mil::params::WidthChoice) (each a hypothesis space of its
/// own); a series' level space's Gaussian takes its own, wider median-heuristic scale.
pub fn space_kernels(params: &FitParams, input: InputKind, e: &Extraction) -> Vec<KernelSpec> {
    let specs = match &params.widths {
        Some(w) if w.choice == WidthChoice::Spaces => w.kernels(&params.kernel),
        _ => None,
    }
    .unwrap_or_else(|| vec![params.kernel]);
    specs
        .into_iter()
        .map(|spec| match spec {
            // A level space's soft histogram wants its own, wider width.
            // (Series only: a bag of 1-feature instances is no level space.)
            KernelSpec::Gaussian { sigma: None, .. } if input.is_series() && e.is_level() => {
                KernelSpec::Gaussian {
                    sigma: None,
                    scale: LEVEL_SCALE,
                }
            }
            other => other,
        })
        .collect()
}

fn prepare_with(ds: &Dataset, params: &FitParams, lean: bool) -> Result<Prepared> {
    let input = ds.check_trainable()?;
    let samples: Vec<&Sample> = ds.samples.iter().collect();
    let (standardizer, extractions) = match input {
        InputKind::Series | InputKind::Multi { .. } => {
            let min_len = ds.min_series_len().unwrap_or(0);
            let max_len = ds.max_series_len().unwrap_or(0);
            let lengths = resolve_lengths(&params.lengths, min_len, max_len)?;
            let units = channel_units(ds);
            let extractions = views_for_differences(&params.spaces, input, ds, &units)
                .extractions(&lengths, median_series_len(ds), input.channels())
                .into_iter()
                .map(|e| with_unit(e, &units))
                .collect();
            (None, extractions)
        }
        InputKind::Bag { dim } => {
            let bags: Vec<_> = ds
                .samples
                .iter()
                .filter_map(|s| match s {
                    Sample::Bag(b) => Some(b),
                    Sample::Series(_) | Sample::Multi(_) => None,
                })
                .collect();
            (
                params.standardize.then(|| Standardizer::fit(&bags)),
                vec![Extraction::raw(dim)],
            )
        }
    };
    let is_series = input.is_series();
    // Every space's share of k, from the channels the spaces read.
    let k = representatives(params, &extractions, samples.len());
    let spaces = extractions
        .par_iter()
        .enumerate()
        .map(|(i, e)| {
            let set = instance_set(
                &samples,
                is_series.then_some(e),
                params.stride,
                standardizer.as_ref(),
            )?;
            let row_stride = params
                .spaces
                .max_instances
                .map_or(1, |cap| set.n_instances().div_ceil(cap).max(1));
            // The paper's single space per length keeps its seed; the others get their own.
            let nth = extractions[..i]
                .iter()
                .filter(|x| x.length == e.length)
                .count();
            let seed = params.seed
                ^ (e.length as u64).wrapping_mul(0x9E37_79B9)
                ^ (nth as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)
                ^ params.draw.wrapping_mul(DRAW_STEP);
            let reps = match params.spaces.seeds_only {
                // k-means++ seeds: real subsequences spread over the data, at a small
                // fraction of Lloyd's cost, which dominated fits with many spaces.
                Some(points) => kmeans_pp_with(&set.data, set.dim, k, seed, points, 0),
                None => kmeans_pp(&set.data, set.dim, k, seed),
            };
            let (dim, n_instances) = (set.dim, set.n_instances());
            if !lean {
                return Ok(PreparedSpace {
                    extraction: *e,
                    instances: Some(set),
                    dim,
                    n_instances,
                    row_stride,
                    reps,
                    tables: Vec::new(),
                });
            }
            let gram_factor = params.weak == WeakKind::Op1;
            let kernels = resolved_kernels(&set, params, input, e)?;
            let tables = KernelTable::statistics_at(&set, &reps, &kernels, gram_factor)?;
            let tables = kernels.into_iter().zip(tables).collect();
            Ok(PreparedSpace {
                extraction: *e,
                instances: None,
                dim,
                n_instances,
                row_stride,
                reps,
                tables,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Prepared {
        input,
        channel_names: ds.channels.clone(),
        standardizer,
        spaces,
    })
}

/// Representatives per space: `k`, or with `k_shared_by_channels` k divided by the number
/// of channels read by spaces of their own, at most by 4 (25 of the default 100). Every
/// channel brings the univariate set of spaces, and a round prices every representative of
/// every space (threshold pricing over their histograms was 44 % of a 12-channel fit), so
/// the fit grew with the channels where RDST's fixed shapelet budget does not: at 4
/// classes and 12 channels (BasicMotionsWindows, five draws) 100 a space fitted in 5.4-6.7 s
/// against RDST's 3.8-4.1 s, 25 in 1.6-4.1 s at the same accuracy (0.976); ACSF1Frames
/// (10 classes) 21-22.5 s against 8.4-9.3 s, 0.502 against 0.511 over six draws.
///
/// With `table_budget`, at most the budget over the `bags` of the training set, and at
/// most [`BUDGET_MAX_REPRESENTATIVES`].
fn representatives(params: &FitParams, extractions: &[Extraction], bags: usize) -> usize {
    let k = shared_k(params, extractions);
    match params.table_budget {
        Some(budget) => k.min((budget / bags.max(1)).clamp(1, BUDGET_MAX_REPRESENTATIVES)),
        None => k,
    }
}

/// The most representatives a table budget leaves a space: every instance's distance row
/// costs instances x k x features, so a few large bags (20 bags of 5,000 instances, where
/// the budget alone allows 50,000) would price for minutes; 8,000 keeps MUSK2's 5,900
/// training instances all.
const BUDGET_MAX_REPRESENTATIVES: usize = 8_000;

/// `k` (every instance: `usize::MAX`), shared by channels as [`representatives`] says.
fn shared_k(params: &FitParams, extractions: &[Extraction]) -> usize {
    let Some(k) = params.k else {
        return usize::MAX;
    };
    if !params.k_shared_by_channels {
        return k;
    }
    let mut channels: Vec<usize> = extractions
        .iter()
        .filter(|e| e.block == 0)
        .map(|e| e.channel)
        .collect();
    channels.sort_unstable();
    channels.dedup();
    (k / channels.len().clamp(1, 4)).max(1)
}

/// A sub-fit's draw of representatives: its index times this odd constant (the golden
/// ratio's 64-bit fraction) in the k-means++ seed.
const DRAW_STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// The median length of the training series: the dilations a space set offers fit it, so
/// one short series does not take the long receptive fields from everyone.
fn median_series_len(ds: &Dataset) -> usize {
    let mut lens: Vec<usize> = ds.samples.iter().filter_map(Sample::series_len).collect();
    if lens.is_empty() {
        return 0;
    }
    let mid = lens.len() / 2;
    *lens.select_nth_unstable(mid).1
}

/// The spaces' views for this training set: without the lag-1 difference, the lag view
/// taking both normalisations in its place, when a univariate set's differences are mostly
/// noise ([`SpaceParams::lag_for_noisy_diff`]). Univariate only: on twelve spectral
/// channels the lag in place of the difference lost (ACSF1Frames 0.623 -> 0.589, 3 seeds).
fn views_for_differences(
    spaces: &SpaceParams,
    input: InputKind,
    ds: &Dataset,
    units: &[i32],
) -> SpaceParams {
    let both = spaces.views.contains(&View::Diff) && spaces.views.contains(&View::Lag);
    let noisy = match spaces.lag_for_noisy_diff {
        Some(floor) if both && input.channels() <= 1 => {
            difference_autocorrelation(ds, units).is_some_and(|r| r < floor)
        }
        _ => false,
    };
    if noisy {
        SpaceParams {
            views: spaces
                .views
                .iter()
                .copied()
                .filter(|v| *v != View::Diff)
                .collect(),
            ..spaces.clone()
        }
    } else {
        spaces.clone()
    }
}

/// The median over training series and channels of the lag-1 autocorrelation of the first
/// difference (finite readings only; series of fewer than four or of constant differences
/// left out): near -0.5 where the differences are white noise, near 1 on a smooth series.
/// None when no series has such differences.
fn difference_autocorrelation(ds: &Dataset, units: &[i32]) -> Option<f64> {
    let mut r1: Vec<f64> = Vec::new();
    let mut diff: Vec<f64> = Vec::new();
    for s in &ds.samples {
        for (c, values) in s.channels().into_iter().flatten().enumerate() {
            diff.clear();
            // In the channel's unit, where the squares below stay finite: the same ratio.
            let s = unit(-units.get(c).copied().unwrap_or(0));
            let finite: Vec<f64> = values
                .iter()
                .filter(|v| v.is_finite())
                .map(|v| v * s)
                .collect();
            diff.extend(finite.windows(2).map(|w| w[1] - w[0]));
            if diff.len() < 3 {
                continue;
            }
            let mean = diff.iter().sum::<f64>() / diff.len() as f64;
            let var: f64 = diff.iter().map(|d| (d - mean) * (d - mean)).sum();
            if !(var > 0.0 && var.is_finite()) {
                continue;
            }
            let cov: f64 = diff.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
            r1.push(cov / var);
        }
    }
    if r1.is_empty() {
        return None;
    }
    let mid = r1.len() / 2;
    Some(*r1.select_nth_unstable_by(mid, f64::total_cmp).1)
}

/// Each channel's mean |x| over the training series (readings that are not finite left out),
/// as the nearest power of two's exponent: the unit a z space's flat floor is relative to.
/// A power of two, so data scaled by one gives exactly the same model; 0 for a channel of
/// zeros, as for data near unit scale (z-normalised series), whose models it leaves as they were.
fn channel_units(ds: &Dataset) -> Vec<i32> {
    let channels = || {
        ds.samples
            .iter()
            .flat_map(|s| s.channels().into_iter().flatten().enumerate())
    };
    // Each channel's largest |x| as a power of two, so the sum below of |x| / 2^top stays
    // finite at any magnitude (the same bits as the plain sum, scaled).
    let mut top: Vec<i32> = Vec::new();
    for (c, values) in channels() {
        if top.len() <= c {
            top.resize(c + 1, i32::MIN);
        }
        for v in values.iter().filter(|v| v.is_finite() && **v != 0.0) {
            top[c] = top[c].max(exponent(v.abs()));
        }
    }
    let mut sums = vec![(0.0f64, 0usize); top.len()];
    for (c, values) in channels() {
        let s = unit(-top[c].max(-1022));
        for v in values.iter().filter(|v| v.is_finite()) {
            sums[c].0 += v.abs() * s;
            sums[c].1 += 1;
        }
    }
    sums.into_iter()
        .zip(top)
        .map(
            |((sum, n), top)| match nearest_power_of_two(sum / n.max(1) as f64) {
                _ if top == i32::MIN => 0,
                e => e + top.max(-1022),
            },
        )
        .collect()
}

/// The exponent of a positive finite `x`'s leading bit (subnormals read as the smallest).
fn exponent(x: f64) -> i32 {
    (((x.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-1022)
}

/// The exponent of the power of two nearest `x` (in ratio), read from its bits so that
/// x 2^k gives exactly the exponent + k; 0 for zero or a value that is not finite.
fn nearest_power_of_two(x: f64) -> i32 {
    if !(x.is_finite() && x >= f64::MIN_POSITIVE) {
        return 0;
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mantissa = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    exp + i32::from(mantissa >= std::f64::consts::SQRT_2)
}

/// A z space with its channel's unit (the largest of a dependent space's channels), which
/// its flat floor is relative to; another space with it only beyond 2^+-[`UNIT_LIMIT`],
/// where its values' squares would leave f64's range (its model is the same either way: a
/// power of two changes no decision), else with 0, as every artifact from before.
fn with_unit(e: Extraction, units: &[i32]) -> Extraction {
    let unit_exp = if e.block > 0 {
        units.iter().copied().max().unwrap_or(0)
    } else {
        units.get(e.channel).copied().unwrap_or(0)
    };
    if e.znorm || unit_exp.abs() > UNIT_LIMIT {
        Extraction { unit_exp, ..e }
    } else {
        e
    }
}

/// sigma = 1 / median |x - x'|^2 over seeded random pairs of instances: the median heuristic,
/// which puts a typical pair at K = e^-1.
pub fn median_heuristic_sigma(set: &InstanceSet, seed: u64) -> f64 {
    let n = set.n_instances();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut d: Vec<f64> = (0..4000.min(n * n))
        .map(|_| {
            let a = rng.random_range(0..n);
            let b = rng.random_range(0..n);
            sq_dist(set.instance(a), set.instance(b))
        })
        .filter(|&v| v > 0.0)
        .collect();
    if d.is_empty() {
        return 1.0;
    }
    let mid = d.len() / 2;
    let (_, med, _) = d.select_nth_unstable_by(mid, |a, b| a.total_cmp(b));
    1.0 / *med
}

pub fn resolve_kernel(spec: &KernelSpec, set: &InstanceSet, seed: u64) -> Result<Kernel> {
    let k = match *spec {
        KernelSpec::Gaussian { sigma: Some(s), .. } => Kernel::Gaussian { sigma: s },
        KernelSpec::Gaussian { sigma: None, scale } => Kernel::Gaussian {
            sigma: scale * median_heuristic_sigma(set, seed),
        },
        KernelSpec::Linear => Kernel::Linear,
        KernelSpec::Polynomial { degree, coef0 } => Kernel::Polynomial { degree, coef0 },
    };
    k.validate()?;
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Series of a slow cycle (period `period` points) plus `noise` x a deterministic
    /// pseudo-random sequence, two classes of `per_class` series of 200 points.
    fn cycles(noise: f64, per_class: usize) -> Dataset {
        let mut u = crate::mil::test_draws::uniform(12345);
        let mut uniform = || u() - 0.5;
        let (mut samples, mut labels, mut ids) = (Vec::new(), Vec::new(), Vec::new());
        for (c, period) in [(0, 60.0), (1, 90.0)] {
            for i in 0..per_class {
                let x = (0..200)
                    .map(|t| (std::f64::consts::TAU * t as f64 / period).sin() + noise * uniform())
                    .collect();
                samples.push(Sample::Series(x));
                labels.push(c.to_string());
                ids.push(format!("{c}-{i}"));
            }
        }
        Dataset {
            ids,
            samples,
            labels,
            channels: Vec::new(),
        }
    }

    fn views(ds: &Dataset, params: &FitParams) -> Vec<(View, bool)> {
        let p = prepare(ds, params).unwrap();
        let mut v: Vec<(View, bool)> = p
            .spaces
            .iter()
            .filter(|s| !s.extraction.is_level())
            .map(|s| (s.extraction.view, s.extraction.znorm))
            .collect();
        v.sort_by_key(|(view, z)| (format!("{view:?}"), *z));
        v.dedup();
        v
    }

    /// White noise over a slow cycle makes the lag-1 differences noise (autocorrelation
    /// near -0.5): the lag view takes the lag-1 difference's z spaces. A smooth cycle or the
    /// option off keep the difference (views the user gave: `tests/cli.rs`).
    #[test]
    fn noisy_differences_give_way_to_the_change_over_the_dilation() {
        let noisy = cycles(1.0, 3);
        let smooth = cycles(0.0, 3);
        let r_noisy = difference_autocorrelation(&noisy, &[0]).unwrap();
        let r_smooth = difference_autocorrelation(&smooth, &[0]).unwrap();
        assert!(r_noisy < -0.4, "{r_noisy}");
        assert!(r_smooth > 0.9, "{r_smooth}");
        let params = FitParams::default();
        let with_diff = vec![
            (View::Diff, true),
            (View::Lag, false),
            (View::Raw, false),
            (View::Raw, true),
        ];
        let with_lag = vec![
            (View::Lag, false),
            (View::Lag, true),
            (View::Raw, false),
            (View::Raw, true),
        ];
        assert_eq!(views(&noisy, &params), with_lag);
        assert_eq!(views(&smooth, &params), with_diff);
        let off = FitParams {
            spaces: SpaceParams {
                lag_for_noisy_diff: None,
                ..SpaceParams::default()
            },
            ..FitParams::default()
        };
        assert_eq!(views(&noisy, &off), with_diff);
        // Constant series have no autocorrelation to read: the views stay.
        let flat = Dataset {
            samples: vec![Sample::Series(vec![1.0; 50]); 6],
            ..cycles(0.0, 3)
        };
        assert_eq!(difference_autocorrelation(&flat, &[0]), None);
    }

    /// The default k is divided by the channels that have spaces of their own, at most by
    /// 4; a user's k, the paper's form, a dependent space and univariate series keep it.
    #[test]
    fn the_default_k_is_shared_by_the_channels() {
        let per_channel = |channels: usize| -> Vec<Extraction> {
            (0..channels)
                .flat_map(|c| {
                    [
                        Extraction::raw(9).on_channel(c),
                        Extraction::raw(5).on_channel(c),
                    ]
                })
                .collect()
        };
        let shared = FitParams::default();
        assert!(shared.k_shared_by_channels);
        assert_eq!(representatives(&shared, &per_channel(1), 50), 100);
        assert_eq!(representatives(&shared, &per_channel(2), 50), 50);
        assert_eq!(representatives(&shared, &per_channel(3), 50), 33);
        assert_eq!(representatives(&shared, &per_channel(12), 50), 25);
        let dependent = Extraction {
            block: 12,
            ..Extraction::raw(9)
        };
        assert_eq!(representatives(&shared, &[dependent], 50), 100);
        let own = FitParams {
            k_shared_by_channels: false,
            ..FitParams::default()
        };
        assert_eq!(representatives(&own, &per_channel(12), 50), 100);
        assert_eq!(
            representatives(&FitParams::paper(), &per_channel(12), 50),
            100
        );
        let all = FitParams {
            k: None,
            ..FitParams::default()
        };
        assert_eq!(representatives(&all, &per_channel(12), 50), usize::MAX);
    }

    #[test]
    fn the_bag_defaults_take_every_instance_up_to_the_table_budget() {
        let bags = FitParams::for_bags();
        let raw = [Extraction::raw(166)];
        let budget = bags
            .table_budget
            .expect("the bag defaults bound their tables");
        // MUSK2's 92 training bags: every one of its 5,900 instances.
        assert!(representatives(&bags, &raw, 92) >= 5_900);
        assert_eq!(representatives(&bags, &raw, 2_000), budget / 2_000);
        assert_eq!(representatives(&bags, &raw, 2 * budget), 1);
        assert_eq!(representatives(&bags, &raw, 20), BUDGET_MAX_REPRESENTATIVES);
        let user_k = FitParams {
            k: Some(7),
            ..FitParams::for_bags()
        };
        assert_eq!(representatives(&user_k, &raw, 92), 7);
    }
}
