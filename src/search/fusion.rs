//! Hybrid fusion: a convex combination of the two relevance signals, each
//! mapped to [0, 1] on an absolute scale rather than by rank.
//!
//! - `lexical` is the share of the query's BM25 ceiling a memory holds
//!   (`index::Ranking::ceiling`): 1 would be every query word at saturation.
//! - `semantic = clamp((cosine − floor) / (ceiling − floor), 0, 1)` with the
//!   model's `cosine_floor` / `cosine_ceiling` (`robotmem-model.json` "fusion").
//!   A neighbour at or below the floor is not relevant by its vector: it neither
//!   enters the results nor earns points.
//! - `score = w·lexical + (1 − w)·semantic`, `w` = the model's `lexical_weight`;
//!   a memory without a vector (its text was not representable) scores its lexical
//!   share alone, neither helped nor hurt by the missing signal. Real-world
//!   memories get ×1.5 as in BM25-only recall.
//!
//! Why not RRF (the spec's `Σ 1/(k + rank)`): rank fusion gives a weak dense list
//! the same say as a strong BM25 list, so on sets where questions share their
//! answer's words it moves good BM25 hits down (MRR −0.059 on a conversational
//! set). Absolute scores let a confident lexical match stay on top and a
//! confident semantic one win where the words differ; the weights and the floor
//! are tuned per model on development data only (docs/QUALITY.md).

use crate::embed::FusionConfig;

/// The fused score (before the real-world boost) of a memory with BM25 share
/// `lexical` (0 when it holds no query word) and cosine `cosine` (`None`: it has
/// no vector).
pub fn score(f: &FusionConfig, lexical: f64, cosine: Option<f64>) -> f64 {
    match cosine {
        Some(c) => f.lexical_weight * lexical + (1.0 - f.lexical_weight) * semantic(f, c),
        None => lexical,
    }
}

/// The cosine mapped to [0, 1] between the model's floor and ceiling.
pub fn semantic(f: &FusionConfig, cosine: f64) -> f64 {
    ((cosine - f.cosine_floor) / (f.cosine_ceiling - f.cosine_floor)).clamp(0.0, 1.0)
}

/// Whether a neighbour is relevant by its vector.
pub fn above_floor(f: &FusionConfig, cosine: f64) -> bool {
    cosine > f.cosine_floor
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FusionConfig = FusionConfig { lexical_weight: 0.6, cosine_floor: 0.3, cosine_ceiling: 0.8 };

    #[test]
    fn scores_are_convex_and_clamped() {
        assert_eq!(score(&F, 1.0, Some(1.0)), 1.0);
        assert_eq!(score(&F, 0.0, Some(0.1)), 0.0);
        assert!((score(&F, 0.5, Some(0.55)) - (0.6 * 0.5 + 0.4 * 0.5)).abs() < 1e-12);
        assert_eq!(score(&F, 0.25, None), 0.25);
        assert!(!above_floor(&F, 0.3) && above_floor(&F, 0.31));
    }
}
