//! robotmem reads a Unigram `tokenizer.json` with its own compact vocabulary
//! (src/embed/unigram.rs) instead of `tokenizers`' hash-map trie; everything
//! else in the tokenizer stays `tokenizers`' own. This test holds the two to
//! the same output — ids, offsets, special-token masks, after truncation —
//! for every model provisioned under `.cache/models` (the multilingual USE model
//! is Unigram; the default MiniLM model is WordPiece and takes the other path),
//! over real text (every memory and question of the SQuAD and CMRC development
//! sets and the robot dev set) and over random strings drawn from the whole
//! `char` range and from mixtures of scripts, spaces and marks.

#[path = "devsets/load.rs"]
mod load;
mod model;
#[path = "common/rng.rs"]
mod rng;

use rng::Rng;
use tokenizers::{Encoding, Tokenizer, TruncationParams};

/// Ids, type ids, offsets and special-token mask of an encoding.
type View = (Vec<u32>, Vec<u32>, Vec<(usize, usize)>, Vec<u32>);

fn view(e: &Encoding) -> View {
    (e.get_ids().to_vec(), e.get_type_ids().to_vec(), e.get_offsets().to_vec(), e.get_special_tokens_mask().to_vec())
}

/// Real texts: the development sets (when `../shared/data` is there) and the robot dev set.
fn real_texts() -> Vec<String> {
    let mut out = Vec::new();
    for (name, _) in load::SETS {
        match load::load(name) {
            Ok(set) => {
                out.extend(set.memories.into_iter().map(|m| m.text));
                out.extend(set.queries.into_iter().map(|q| q.question));
            }
            Err(e) if std::env::var("ROBOTMEM_REQUIRE_DEVSETS").as_deref() == Ok("1") => {
                panic!("the {name} texts: {e}, and ROBOTMEM_REQUIRE_DEVSETS=1")
            }
            Err(e) => eprintln!("SKIPPED the {name} texts: {e}"),
        }
    }
    let robot: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/robot_devset.json")).unwrap(),
    )
    .unwrap();
    for (list, field) in [("memories", "text"), ("queries", "query")] {
        out.extend(robot[list].as_array().unwrap().iter().filter_map(|x| x[field].as_str().map(str::to_string)));
    }
    out
}

/// Random strings: any `char`, or a mixture of ASCII, CJK, Hangul, combining
/// marks, full-width forms, runs of spaces and control characters, or a slice of a real text.
fn random_texts(real: &[String], n: usize) -> Vec<String> {
    let mut rng = Rng(0x0075_6e69_6772_616d);
    let pools: &[&[(u32, u32)]] = &[
        &[(0, 0x10FFFF)],
        &[
            (0x20, 0x7E),
            (0x4E00, 0x9FFF),
            (0xAC00, 0xD7A3),
            (0x300, 0x36F),
            (0xFF01, 0xFF5E),
            (0x20, 0x20),
            (0x3000, 0x3000),
            (0, 0x1F),
        ],
        &[(0x20, 0x7E)],
    ];
    (0..n)
        .map(|i| {
            if i % 4 == 3 && !real.is_empty() {
                let t: Vec<char> = real[rng.below(real.len())].chars().collect();
                let a = rng.below(t.len() + 1);
                let b = a + rng.below(t.len() - a + 1);
                return t[a..b].iter().collect();
            }
            let pool = pools[rng.below(pools.len())];
            let len = rng.below(40);
            (0..len)
                .filter_map(|_| {
                    let (lo, hi) = pool[rng.below(pool.len())];
                    char::from_u32(lo + rng.below((hi - lo + 1) as usize) as u32)
                })
                .collect()
        })
        .collect()
}

fn check(name: &str, texts: &[String]) -> bool {
    let Some(m) = model::named("unigram", name) else { return false };
    let json = std::fs::read(m.dir.join("tokenizer.json")).unwrap();
    let trunc = Some(TruncationParams { max_length: 128, ..Default::default() });
    let mut stock = Tokenizer::from_bytes(&json).unwrap();
    stock.with_truncation(trunc.clone()).unwrap();
    let mut ours = robotmem::internals::embed::unigram::from_bytes(&json).unwrap();
    ours.with_truncation(trunc).unwrap();
    let unigram = matches!(ours.get_model(), robotmem::internals::embed::unigram::Vocab::Unigram(_));
    assert_eq!(stock.get_vocab_size(false), ours.get_vocab_size(false), "{name}");
    for t in texts {
        let a = stock.encode(t.as_str(), true).unwrap();
        let b = ours.encode(t.as_str(), true).unwrap();
        assert_eq!(view(&a), view(&b), "{name}: {t:?}");
    }
    for id in (0..stock.get_vocab_size(false) as u32).step_by(97) {
        let piece = stock.id_to_token(id).unwrap();
        assert_eq!(ours.id_to_token(id), Some(piece.clone()), "{name}: id {id}");
        assert_eq!(ours.token_to_id(&piece), stock.token_to_id(&piece), "{name}: {piece:?}");
    }
    eprintln!("{name}: {} texts, same ids and offsets (compact Unigram: {unigram})", texts.len());
    unigram
}

#[test]
fn compact_unigram_tokenizes_like_tokenizers() {
    let mut real = real_texts();
    if cfg!(debug_assertions) {
        // The debug suite checks every 8th real text (78 s → about 15 s); scripts/test.sh
        // runs this test again in release over all of them.
        real = real.into_iter().step_by(8).collect();
    }
    let mut texts = random_texts(&real, if cfg!(debug_assertions) { 5_000 } else { 20_000 });
    texts.extend(real);
    assert!(check("use-multilingual-v3-int8", &texts), "USE's tokenizer.json is Unigram and read compactly");
    assert!(!check("all-MiniLM-L6-v2-int8", &texts), "MiniLM's WordPiece goes through tokenizers' own model");
}
