//! Time series as bags of subsequences (the paper, section 6.1: B_tau = {tau[j..j+l-1]}).

use crate::mil::bag::{Bag, InstanceSet, Sample, Standardizer};
use crate::mil::error::{MilError, Result};
use crate::mil::space::Extraction;

/// Number of subsequences of length `l` taken every `stride` points of a series of length `n`.
pub fn n_subsequences(n: usize, l: usize, stride: usize) -> usize {
    if l == 0 || n < l {
        0
    } else {
        (n - l) / stride + 1
    }
}

/// The bag of all subsequences of length `l` (stride 1 by default in the paper).
/// A series shorter than `l` still has one subsequence, read with its last point repeated,
/// as the shapelet spaces read one (space.rs), so a short series never fails a fit or a
/// prediction.
pub fn subsequence_bag(series: &[f64], l: usize, stride: usize) -> Result<Bag> {
    let Some(last) = series.len().checked_sub(1) else {
        return Err(MilError::InvalidData(
            "an empty series has no subsequence".into(),
        ));
    };
    if l == 0 {
        return Err(MilError::InvalidParameter("subsequence length 0".into()));
    }
    let count = n_subsequences(series.len(), l, stride.max(1)).max(1);
    let mut data = Vec::with_capacity(count * l);
    for j in 0..count {
        let s = j * stride.max(1);
        data.extend((s..s + l).map(|i| series[i.min(last)]));
    }
    Bag::new(l, data)
}

/// All instances of `samples` in one buffer. Series become the subsequences of `space`
/// (which must be given for series) at `stride`; bag instances are passed through `scaler`
/// if any.
pub fn instance_set(
    samples: &[&Sample],
    space: Option<&Extraction>,
    stride: usize,
    scaler: Option<&Standardizer>,
) -> Result<InstanceSet> {
    let mut data = Vec::new();
    let mut offsets = Vec::with_capacity(samples.len() + 1);
    offsets.push(0);
    let mut dim = 0;
    let mut count = 0;
    for (i, s) in samples.iter().enumerate() {
        match s {
            Sample::Series(v) => {
                let e = space.ok_or_else(|| {
                    MilError::InvalidParameter("series data needs a shapelet length".into())
                })?;
                // Shorter than the footprint: one subsequence, its last point repeated.
                if v.is_empty() {
                    return Err(MilError::InvalidData(format!("series {i} is empty")));
                }
                dim = e.length;
                count += e.extract_all(v, stride, &mut data);
            }
            Sample::Multi(c) => {
                let e = space.ok_or_else(|| {
                    MilError::InvalidParameter("series data needs a shapelet length".into())
                })?;
                let n = c.first().map_or(0, Vec::len);
                if n == 0 || c.iter().any(|v| v.len() != n) {
                    return Err(MilError::InvalidData(format!(
                        "series {i} has channels of lengths {:?}, not all of one length >= 1",
                        c.iter().map(Vec::len).collect::<Vec<_>>(),
                    )));
                }
                let channels: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
                dim = e.dim();
                count += e.extract_all_channels(&channels, stride, &mut data);
            }
            Sample::Bag(b) => {
                dim = b.dim();
                match scaler {
                    Some(sc) => {
                        let start = data.len();
                        data.resize(start + b.as_slice().len(), 0.0);
                        for (k, x) in b.instances().enumerate() {
                            let o = start + k * dim;
                            sc.apply(x, &mut data[o..o + dim]);
                        }
                    }
                    None => data.extend_from_slice(b.as_slice()),
                }
                count += b.len();
            }
        }
        offsets.push(count);
    }
    Ok(InstanceSet { dim, data, offsets })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsequence_bag_of_a_short_series() {
        let b = subsequence_bag(&[1.0, 2.0, 3.0, 4.0, 5.0], 3, 1).unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(b.instance(0), &[1.0, 2.0, 3.0]);
        assert_eq!(b.instance(1), &[2.0, 3.0, 4.0]);
        assert_eq!(b.instance(2), &[3.0, 4.0, 5.0]);
        let b2 = subsequence_bag(&[1.0, 2.0, 3.0, 4.0, 5.0], 2, 2).unwrap();
        assert_eq!(b2.as_slice(), &[1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn a_series_shorter_than_the_length_is_one_subsequence_with_its_last_point_repeated() {
        let b = subsequence_bag(&[1.0, 2.0], 3, 1).unwrap();
        assert_eq!(b.as_slice(), &[1.0, 2.0, 2.0]);
        let set = instance_set(
            &[&Sample::Series(vec![4.0, 5.0])],
            Some(&Extraction::raw(3)),
            1,
            None,
        )
        .unwrap();
        assert_eq!(set.data, vec![4.0, 5.0, 5.0]);
        assert!(subsequence_bag(&[], 3, 1).is_err());
    }

    #[test]
    fn instance_set_concatenates_bags() {
        let a = Sample::Series(vec![0.0, 1.0, 2.0]);
        let b = Sample::Series(vec![5.0, 6.0, 7.0, 8.0]);
        let s = instance_set(&[&a, &b], Some(&Extraction::raw(2)), 1, None).unwrap();
        assert_eq!(s.offsets, vec![0, 2, 5]);
        assert_eq!(s.instance(2), &[5.0, 6.0]);
        assert_eq!(s.bag_range(1), 2..5);
    }
}
