//! Bags, samples and datasets.

use serde::{Deserialize, Serialize};

use super::error::{MilError, Result};

/// A bag: a non-empty set of instances of one dimension, stored row-major in one buffer so
/// the kernel loops walk contiguous memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Bag {
    dim: usize,
    data: Vec<f64>,
}

impl Bag {
    /// A bag from a row-major buffer of `data.len() / dim` instances.
    pub fn new(dim: usize, data: Vec<f64>) -> Result<Self> {
        if dim == 0 {
            return Err(MilError::InvalidData(
                "bag instances have dimension 0".into(),
            ));
        }
        if data.is_empty() {
            return Err(MilError::InvalidData("empty bag".into()));
        }
        if !data.len().is_multiple_of(dim) {
            return Err(MilError::InvalidData(format!(
                "bag buffer of {} values is not a whole number of instances of dimension {dim}",
                data.len()
            )));
        }
        if let Some(pos) = data.iter().position(|v| !v.is_finite()) {
            return Err(MilError::InvalidData(format!(
                "instance {} feature {} is not finite ({})",
                pos / dim,
                pos % dim,
                data[pos]
            )));
        }
        Ok(Self { dim, data })
    }

    /// A bag from instance vectors, which must share one dimension.
    pub fn from_instances(instances: &[Vec<f64>]) -> Result<Self> {
        let dim = instances.first().map_or(0, Vec::len);
        if let Some((i, x)) = instances.iter().enumerate().find(|(_, x)| x.len() != dim) {
            return Err(MilError::InvalidData(format!(
                "instance {i} has dimension {} but instance 0 has {dim}",
                x.len()
            )));
        }
        Self::new(dim, instances.concat())
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of instances.
    pub fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    /// Always false: a bag is never empty (checked on construction).
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn instance(&self, i: usize) -> &[f64] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn instances(&self) -> std::slice::ChunksExact<'_, f64> {
        self.data.chunks_exact(self.dim)
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }
}

/// One example: a time series (scored as the bag of its subsequences), a multichannel
/// series (one `Vec` per channel, all of one length) or a bag.
#[derive(Debug, Clone, PartialEq)]
pub enum Sample {
    Series(Vec<f64>),
    Multi(Vec<Vec<f64>>),
    Bag(Bag),
}

impl Sample {
    /// The channels of a series sample (one for a univariate series); None for a bag.
    pub fn channels(&self) -> Option<Vec<&[f64]>> {
        match self {
            Sample::Series(v) => Some(vec![v.as_slice()]),
            Sample::Multi(c) => Some(c.iter().map(Vec::as_slice).collect()),
            Sample::Bag(_) => None,
        }
    }

    /// Time steps of a series sample; None for a bag.
    pub fn series_len(&self) -> Option<usize> {
        match self {
            Sample::Series(v) => Some(v.len()),
            Sample::Multi(c) => Some(c.first().map_or(0, Vec::len)),
            Sample::Bag(_) => None,
        }
    }

    fn kind(&self) -> InputKind {
        match self {
            Sample::Series(_) => InputKind::Series,
            Sample::Multi(c) => InputKind::Multi { channels: c.len() },
            Sample::Bag(b) => InputKind::Bag { dim: b.dim() },
        }
    }
}

/// What a model takes as input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputKind {
    /// Univariate time series of any length (at least the longest shapelet).
    Series,
    /// Bags of instances of a fixed dimension.
    Bag { dim: usize },
    /// Time series of `channels` (at least two) values per time step.
    Multi { channels: usize },
}

impl InputKind {
    /// Series of one or more channels (scored as bags of subsequences).
    pub fn is_series(self) -> bool {
        matches!(self, InputKind::Series | InputKind::Multi { .. })
    }

    /// Values per time step of a series input (1 for univariate); 0 for bags.
    pub fn channels(self) -> usize {
        match self {
            InputKind::Series => 1,
            InputKind::Multi { channels } => channels,
            InputKind::Bag { .. } => 0,
        }
    }
}

/// Labelled examples, all of one input kind. Labels are arbitrary strings.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub ids: Vec<String>,
    pub samples: Vec<Sample>,
    pub labels: Vec<String>,
    /// Channel names of multichannel series, from the file's header (empty: unnamed).
    pub channels: Vec<String>,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The common input kind; an error if the samples mix kinds or bag dimensions.
    pub fn input_kind(&self) -> Result<InputKind> {
        let first = self
            .samples
            .first()
            .ok_or_else(|| MilError::InvalidData("the dataset is empty".into()))?;
        let kind = first.kind();
        for (i, s) in self.samples.iter().enumerate() {
            let k = s.kind();
            if k != kind {
                return Err(MilError::InvalidData(format!(
                    "sample {} ({}) is {k:?} but sample 0 is {kind:?}",
                    i, self.ids[i]
                )));
            }
        }
        Ok(kind)
    }

    /// Sorted distinct labels.
    pub fn classes(&self) -> Vec<String> {
        let mut c = self.labels.clone();
        c.sort();
        c.dedup();
        c
    }

    /// Length of the shortest series (None for bag data).
    pub fn min_series_len(&self) -> Option<usize> {
        self.samples.iter().filter_map(Sample::series_len).min()
    }

    /// Length of the longest series (None for bag data).
    pub fn max_series_len(&self) -> Option<usize> {
        self.samples.iter().filter_map(Sample::series_len).max()
    }

    /// The examples at `idx`, in that order.
    pub fn subset(&self, idx: &[usize]) -> Dataset {
        Dataset {
            ids: idx.iter().map(|&i| self.ids[i].clone()).collect(),
            samples: idx.iter().map(|&i| self.samples[i].clone()).collect(),
            labels: idx.iter().map(|&i| self.labels[i].clone()).collect(),
            channels: self.channels.clone(),
        }
    }

    /// Checks shared by every trainer: non-empty, one input kind, at least two classes.
    pub fn check_trainable(&self) -> Result<InputKind> {
        let kind = self.input_kind()?;
        let classes = self.classes();
        if classes.len() < 2 {
            return Err(MilError::InvalidData(format!(
                "a training set needs at least two classes, found only {:?} in {} examples",
                classes,
                self.len()
            )));
        }
        Ok(kind)
    }
}

/// All instances of a set of bags in one row-major buffer, with bag boundaries: the layout
/// the trainer's kernel tables are built from.
#[derive(Debug, Clone)]
pub struct InstanceSet {
    pub dim: usize,
    pub data: Vec<f64>,
    /// Bag i holds instances `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<usize>,
}

impl InstanceSet {
    pub fn n_bags(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn n_instances(&self) -> usize {
        *self
            .offsets
            .last()
            .expect("offsets always holds at least one entry")
    }

    pub fn instance(&self, j: usize) -> &[f64] {
        &self.data[j * self.dim..(j + 1) * self.dim]
    }

    pub fn bag_range(&self, i: usize) -> std::ops::Range<usize> {
        self.offsets[i]..self.offsets[i + 1]
    }

    /// The instances of bags `bags`, in that order.
    pub fn subset(&self, bags: &[usize]) -> InstanceSet {
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for &b in bags {
            let r = self.bag_range(b);
            data.extend_from_slice(&self.data[r.start * self.dim..r.end * self.dim]);
            offsets.push(offsets.last().copied().unwrap_or(0) + r.len());
        }
        InstanceSet {
            dim: self.dim,
            data,
            offsets,
        }
    }
}

/// The largest power of two at most `x`, for a positive normal `x`; 1 otherwise (zero, a
/// subnormal: values whose squares are no risk).
fn power_of_two_at_or_below(x: f64) -> f64 {
    if x.is_finite() && x >= f64::MIN_POSITIVE {
        f64::from_bits(x.to_bits() & (0x7ffu64 << 52))
    } else {
        1.0
    }
}

/// Per-feature z-scoring of bag instances, fitted on training instances and stored in the
/// artifact so prediction applies the same map. Constant features keep scale 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    pub mean: Vec<f64>,
    pub scale: Vec<f64>,
}

impl Standardizer {
    pub fn fit(bags: &[&Bag]) -> Self {
        let dim = bags.first().map_or(0, |b| b.dim());
        // Each feature's sums in the unit of its largest |x| (a power of two: the same bits,
        // scaled), so its squares stay finite at any magnitude.
        let mut top = vec![0.0f64; dim];
        for b in bags {
            for x in b.instances() {
                for (t, v) in top.iter_mut().zip(x) {
                    *t = t.max(v.abs());
                }
            }
        }
        let units: Vec<f64> = top.iter().map(|&t| power_of_two_at_or_below(t)).collect();
        let mut mean = vec![0.0; dim];
        let mut sq = vec![0.0; dim];
        let mut n = 0usize;
        for b in bags {
            for x in b.instances() {
                n += 1;
                for (f, v) in x.iter().enumerate() {
                    let v = v / units[f];
                    mean[f] += v;
                    sq[f] += v * v;
                }
            }
        }
        let n = n.max(1) as f64;
        let mut scale = vec![1.0; dim];
        for f in 0..dim {
            mean[f] /= n;
            let square = sq[f] / n;
            let var = (square - mean[f] * mean[f]).max(0.0);
            // Constant when the deviation is within a millionth of the values' magnitude
            // (rounding in the one-pass variance), in any unit.
            if var > 1e-12 * square {
                scale[f] = var.sqrt() * units[f];
            }
            mean[f] *= units[f];
        }
        Self { mean, scale }
    }

    pub fn apply(&self, x: &[f64], out: &mut [f64]) {
        for f in 0..x.len() {
            out[f] = (x[f] - self.mean[f]) / self.scale[f];
        }
    }
}
