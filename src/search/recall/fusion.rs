//! Hybrid fusion: a convex combination of the two relevance signals, each
//! mapped to [0, 1] on an absolute scale rather than by rank.
//!
//! - `lexical` is the share of the query's BM25 ceiling a memory holds
//!   (`search::text::Ranking::ceiling`): 1 would be every query word at saturation.
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
use crate::text::Script;

/// The lexical weight of one memory: the model's weight, scaled by
/// `cross_script` for a memory in another script than the query's
/// (`FusionConfig`'s docs).
pub fn weight(f: &FusionConfig, cross_script: bool) -> f64 {
    if cross_script {
        f.lexical_weight * f.cross_script
    } else {
        f.lexical_weight
    }
}

/// The fused score (before the real-world boost) of a memory with BM25 share
/// `lexical` (0 when it holds no query word) and semantic signal `semantic` in
/// [0, 1] (`None`: it has no vector), at lexical weight `w` ([`weight`]).
pub fn score(w: f64, lexical: f64, semantic: Option<f64>) -> f64 {
    match semantic {
        Some(s) => w * lexical + (1.0 - w) * s,
        None => lexical,
    }
}

/// The cosines of the query's other-script neighbours: their mean and standard
/// deviation (for `cross_script_z`), from at least 3 of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub deviation: f64,
}

impl Spread {
    pub fn of(cosines: &[f64]) -> Option<Spread> {
        if cosines.len() < 3 {
            return None;
        }
        let n = cosines.len() as f64;
        let mean = cosines.iter().sum::<f64>() / n;
        let var = cosines.iter().map(|c| (c - mean) * (c - mean)).sum::<f64>() / n;
        Some(Spread { mean, deviation: var.sqrt().max(1e-6) })
    }
}

/// The semantic signal of a memory with cosine `cosine`: standardised among the
/// other-script neighbours when it is in another script and the model's fusion
/// asks for it (`spread` known), else [`semantic`].
pub fn semantic_of(f: &FusionConfig, cosine: f64, cross_script: bool, spread: Option<Spread>) -> f64 {
    match (f.cross_script_z, spread) {
        (Some(z), Some(s)) if cross_script => ((cosine - s.mean) / (z * s.deviation)).clamp(0.0, 1.0),
        _ => semantic(f, cosine),
    }
}

/// Whether two texts are in different scripts for fusion, so that they cannot
/// share a word: one is mostly Chinese (CJK share 0.5 or more) and the other has
/// no CJK character at all. A code-switched text ("AGV-3 dock B 坡道 打滑") is in
/// neither's other script: it can share words with both.
pub fn other_script(query: Script, memory: Script) -> bool {
    matches!((query, memory), (Script::MostlyCjk, Script::NoCjk) | (Script::NoCjk, Script::MostlyCjk))
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

    const F: FusionConfig = FusionConfig::new(0.6, 0.3, 0.8);

    #[test]
    fn scores_are_convex_and_clamped() {
        let w = weight(&F, false);
        let sem = |c| Some(semantic(&F, c));
        assert_eq!(w, 0.6);
        assert_eq!(score(w, 1.0, sem(1.0)), 1.0);
        assert_eq!(score(w, 0.0, sem(0.1)), 0.0);
        assert!((score(w, 0.5, sem(0.55)) - (0.6 * 0.5 + 0.4 * 0.5)).abs() < 1e-12);
        assert_eq!(score(w, 0.25, None), 0.25);
        assert!(!above_floor(&F, 0.3) && above_floor(&F, 0.31));
    }

    #[test]
    fn weights_follow_the_script() {
        let f = FusionConfig { cross_script: 0.0, ..F };
        assert_eq!(weight(&f, false), 0.6);
        assert_eq!(weight(&f, true), 0.0);
        // A memory in another script is scored on its meaning alone.
        assert_eq!(score(weight(&f, true), 0.0, Some(semantic(&f, 0.8))), 1.0);
        assert_eq!(weight(&F, true), 0.6, "off by default");
        let other = |q, m| other_script(Script::of_share(q), Script::of_share(m));
        assert!(other(1.0, 0.0) && other(0.0, 0.6) && other(0.5, 0.0));
        // Code-switched texts share words with both scripts.
        assert!(!other(0.2, 0.6) && !other(0.35, 0.0) && !other(0.0, 0.3) && !other(0.9, 0.5));
        // The classes of texts: no letter, Latin only, mixed, mostly Chinese.
        let of = Script::of;
        assert_eq!([of("12.5 / 7"), of("grasp the mug"), of("AGV-3 dock B 坡道 打滑"), of("抓取杯子 ok")], {
            use Script::*;
            [NoCjk, NoCjk, Mixed, MostlyCjk]
        });
    }

    #[test]
    fn other_script_cosines_are_standardised_among_their_own() {
        let f = FusionConfig { cross_script_z: Some(2.0), ..F };
        let s = Spread::of(&[0.2, 0.3, 0.4]).unwrap();
        assert!((s.mean - 0.3).abs() < 1e-12);
        // One deviation above the other-script mean: half of the way to z = 2.
        assert!((semantic_of(&f, 0.3 + s.deviation, true, Some(s)) - 0.5).abs() < 1e-9);
        assert_eq!(semantic_of(&f, 0.25, true, Some(s)), 0.0);
        // Same script, too few neighbours, or the option off: the plain mapping.
        assert_eq!(semantic_of(&f, 0.55, false, Some(s)), semantic(&f, 0.55));
        assert_eq!(semantic_of(&f, 0.55, true, None), semantic(&f, 0.55));
        assert_eq!(semantic_of(&F, 0.55, true, Some(s)), semantic(&F, 0.55));
        assert!(Spread::of(&[0.1, 0.2]).is_none());
    }
}
