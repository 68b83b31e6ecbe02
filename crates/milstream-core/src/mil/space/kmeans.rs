//! k-means++ representatives: the paper's \hat P_S (appendix A.3, second heuristic).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::mil::space::kernel::sq_dist;

/// Most instances k-means looks at; beyond this a seeded uniform sample stands in, which
/// keeps long series affordable and moves centres very little.
pub const KMEANS_MAX_POINTS: usize = 20_000;
const LLOYD_MAX_ITERS: usize = 30;

/// `k` centres of the row-major `data` (rows of `dim`) by k-means++ seeding and Lloyd
/// iterations, deterministic in `seed`. With `k >= n` every instance is a centre.
pub fn kmeans_pp(data: &[f64], dim: usize, k: usize, seed: u64) -> Vec<f64> {
    kmeans_pp_with(data, dim, k, seed, KMEANS_MAX_POINTS, LLOYD_MAX_ITERS)
}

/// [`kmeans_pp`] on a sample of at most `max_points` (at least 2k) with at most `lloyd_iters` Lloyd
/// iterations (0: the k-means++ seeds themselves, real instances spread over the data).
pub fn kmeans_pp_with(
    data: &[f64],
    dim: usize,
    k: usize,
    seed: u64,
    max_points: usize,
    lloyd_iters: usize,
) -> Vec<f64> {
    let n = data.len() / dim;
    if k >= n {
        return data.to_vec();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // k distinct seeds need more than k points to draw from.
    let max_points = max_points.max(k.saturating_mul(2));
    let sample: Vec<f64>;
    let points: &[f64] = if n > max_points {
        let idx = rand::seq::index::sample(&mut rng, n, max_points);
        let mut idx: Vec<usize> = idx.into_iter().collect();
        idx.sort_unstable();
        sample = idx
            .iter()
            .flat_map(|&i| data[i * dim..(i + 1) * dim].iter().copied())
            .collect();
        &sample
    } else {
        data
    };
    let n = points.len() / dim;
    let row = |i: usize| &points[i * dim..(i + 1) * dim];

    // k-means++ seeding (Arthur & Vassilvitskii): next centre drawn proportional to D(x)^2.
    let mut centres: Vec<f64> = Vec::with_capacity(k * dim);
    let first = rng.random_range(0..n);
    centres.extend_from_slice(row(first));
    let mut best: Vec<f64> = (0..n).map(|i| sq_dist(row(i), row(first))).collect();
    for _ in 1..k {
        let total: f64 = best.iter().sum();
        let next = if total <= 0.0 {
            rng.random_range(0..n)
        } else {
            let mut target = rng.random::<f64>() * total;
            let mut pick = n - 1;
            for (i, &b) in best.iter().enumerate() {
                if target < b {
                    pick = i;
                    break;
                }
                target -= b;
            }
            pick
        };
        centres.extend_from_slice(row(next));
        let c = &centres[centres.len() - dim..];
        best.par_iter_mut().enumerate().for_each(|(i, b)| {
            let d = sq_dist(&points[i * dim..(i + 1) * dim], c);
            if d < *b {
                *b = d;
            }
        });
    }

    // Lloyd iterations until assignments stop changing.
    let mut assign = vec![usize::MAX; n];
    for _ in 0..lloyd_iters {
        let new_assign: Vec<usize> = (0..n)
            .into_par_iter()
            .map(|i| nearest(&points[i * dim..(i + 1) * dim], &centres, dim))
            .collect();
        if new_assign == assign {
            break;
        }
        assign = new_assign;
        let mut sums = vec![0.0; k * dim];
        let mut counts = vec![0usize; k];
        for (i, &a) in assign.iter().enumerate() {
            counts[a] += 1;
            for (s, v) in sums[a * dim..(a + 1) * dim].iter_mut().zip(row(i)) {
                *s += v;
            }
        }
        for c in 0..k {
            // An empty cluster keeps its centre: it is still a real point of the data.
            if counts[c] > 0 {
                let inv = 1.0 / counts[c] as f64;
                for f in 0..dim {
                    centres[c * dim + f] = sums[c * dim + f] * inv;
                }
            }
        }
    }
    centres
}

fn nearest(x: &[f64], centres: &[f64], dim: usize) -> usize {
    let mut best = f64::INFINITY;
    let mut arg = 0;
    for (c, z) in centres.chunks_exact(dim).enumerate() {
        let d = sq_dist(x, z);
        if d < best {
            best = d;
            arg = c;
        }
    }
    arg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmeans_finds_separable_clusters() {
        // Three tight clusters around (0,0), (10,0), (0,10).
        let mut data = Vec::new();
        for c in [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]] {
            for d in [[-0.1, 0.0], [0.1, 0.0], [0.0, 0.1], [0.0, -0.1]] {
                data.extend_from_slice(&[c[0] + d[0], c[1] + d[1]]);
            }
        }
        let centres = kmeans_pp(&data, 2, 3, 7);
        let mut got: Vec<(i64, i64)> = centres
            .chunks_exact(2)
            .map(|c| {
                (
                    (c[0] * 1000.0).round() as i64,
                    (c[1] * 1000.0).round() as i64,
                )
            })
            .collect();
        got.sort();
        assert_eq!(got, vec![(0, 0), (0, 10_000), (10_000, 0)]);
        // Seeded: the same call gives the same centres.
        assert_eq!(centres, kmeans_pp(&data, 2, 3, 7));
    }

    #[test]
    fn k_at_least_n_returns_every_instance() {
        let data = vec![1.0, 2.0, 3.0];
        assert_eq!(kmeans_pp(&data, 1, 10, 0), data);
    }
}
