//! Retrieval metrics of the quality tests, as `../shared/data/score.py` computes
//! them: per query the 0-based rank of the first gold hit within the first 10
//! (None: missed); R@k, MRR@10, and the paired bootstrap CI of a difference.

#![allow(dead_code)]

use super::rng::Rng;

/// Bootstrap seed and resamples (docs/QUALITY.md).
pub const SEED: u64 = 0xDE5E_7500_0011;
pub const RESAMPLES: usize = 1000;

/// Per-query values of R@k (hit within k).
pub fn hit_at(first: &[Option<usize>], k: usize) -> Vec<f64> {
    first.iter().map(|f| f.is_some_and(|r| r < k) as u8 as f64).collect()
}

/// Per-query reciprocal rank within 10.
pub fn rr10(first: &[Option<usize>]) -> Vec<f64> {
    first.iter().map(|f| f.filter(|&r| r < 10).map_or(0.0, |r| 1.0 / (r + 1) as f64)).collect()
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// R@1, R@5, R@10, MRR@10.
pub fn metrics(first: &[Option<usize>]) -> [f64; 4] {
    [mean(&hit_at(first, 1)), mean(&hit_at(first, 5)), mean(&hit_at(first, 10)), mean(&rr10(first))]
}

/// Mean difference a − b and its paired bootstrap 95 % CI (percentiles 2.5 and
/// 97.5 of `RESAMPLES` resampled means, nearest rank).
pub fn paired_ci(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    if d.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut r = Rng(SEED);
    let mut means: Vec<f64> =
        (0..RESAMPLES).map(|_| (0..d.len()).map(|_| d[r.below(d.len())]).sum::<f64>() / d.len() as f64).collect();
    means.sort_by(f64::total_cmp);
    let at = |p: f64| means[((p * RESAMPLES as f64).ceil() as usize).clamp(1, RESAMPLES) - 1];
    (mean(&d), at(0.025), at(0.975))
}
