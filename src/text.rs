//! Text normalisation shared by the FTS index, the FTS query builder and dedup.
//!
//! One definition of a "word" serves all three, so a word that dedup or recall
//! looks for is exactly a word the index holds:
//! - runs of CJK ideographs are segmented by jieba (dictionary, no HMM: deterministic);
//! - everything else is split on any character that is not a Unicode letter or digit
//!   (so `grip_force=12.5N` gives `grip`, `force`, `12`, `5n`, as FTS5's unicode61 does);
//! - words are lowercased;
//! - the index's terms are these words, English ones stemmed ([`term`]).
//!
//! Nothing here ever builds FTS5 syntax from raw text: queries are made of quoted
//! words only, so `.`, `"`, `*`, `NEAR`, `-` … in user text are data.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};

/// True for CJK unified ideographs (the basic block, extension A and compatibility).
pub fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{f900}'..='\u{faff}')
}

/// The share of a text's letters that are CJK ideographs (0 for a text without
/// letters). Hybrid fusion takes a text at 0.5 or more as written in Chinese
/// (or Japanese kanji), below as written in another script.
pub fn cjk_share(text: &str) -> f64 {
    let (mut letters, mut cjk) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        cjk += is_cjk(c) as usize;
    }
    if letters == 0 {
        0.0
    } else {
        cjk as f64 / letters as f64
    }
}

/// The script class of a text for hybrid fusion, from its [`cjk_share`]: no CJK
/// ideograph at all (a text without letters too), mostly CJK (a share of 0.5 or
/// more), or mixed. What [`crate::search::recall::fusion::other_script`] compares;
/// the text index keeps each memory's, so a recall does not read its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Script {
    NoCjk = 0,
    Mixed = 1,
    MostlyCjk = 2,
}

impl Script {
    /// The class of a text whose CJK share is `share`.
    pub fn of_share(share: f64) -> Script {
        if share == 0.0 {
            Script::NoCjk
        } else if share >= 0.5 {
            Script::MostlyCjk
        } else {
            Script::Mixed
        }
    }

    /// The class of `text`.
    pub fn of(text: &str) -> Script {
        Script::of_share(cjk_share(text))
    }

    /// The class stored as `b` ([`Script`] `as u8`); `None` for any other byte.
    pub fn from_u8(b: u8) -> Option<Script> {
        [Script::NoCjk, Script::Mixed, Script::MostlyCjk].get(b as usize).copied()
    }
}

fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Loads the jieba dictionary now instead of at the first CJK text.
pub fn preload_segmenter() {
    let _ = jieba();
}

/// Calls `f` with each word of `text` (lowercased, CJK segmented), in order.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut buf = String::new();
    let mut cjk = String::new();
    let flush_cjk = |cjk: &mut String, f: &mut dyn FnMut(&str)| {
        if !cjk.is_empty() {
            for t in jieba().cut(cjk, false) {
                let w = t.word.trim();
                if !w.is_empty() {
                    f(w);
                }
            }
            cjk.clear();
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            if !buf.is_empty() {
                f(&buf);
                buf.clear();
            }
            cjk.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk, &mut f);
            // Lowercasing may add combining marks ('İ' → "i̇"); words keep letters and digits only.
            buf.extend(c.to_lowercase().filter(|l| l.is_alphanumeric()));
        } else {
            flush_cjk(&mut cjk, &mut f);
            if !buf.is_empty() {
                f(&buf);
                buf.clear();
            }
        }
    }
    flush_cjk(&mut cjk, &mut f);
    if !buf.is_empty() {
        f(&buf);
    }
}

/// The words of `text`, in order, duplicates kept (what the tokenizer tests look at).
#[cfg(test)]
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// Text as stored in the FTS index: CJK runs separated into jieba words by spaces,
/// everything else unchanged (FTS5's own tokenizer lowercases and splits it).
pub fn index_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_cjk) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut run = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            run.push(c);
            continue;
        }
        push_segmented(&mut out, &mut run);
        out.push(c);
    }
    push_segmented(&mut out, &mut run);
    Cow::Owned(out)
}

fn push_segmented(out: &mut String, run: &mut String) {
    if run.is_empty() {
        return;
    }
    out.push(' ');
    for t in jieba().cut(run, false) {
        out.push_str(t.word);
        out.push(' ');
    }
    run.clear();
}

/// Normalises one word as the text index and its queries see it (and the
/// cosine dedup layer compares): English words (ASCII lowercase) stemmed with
/// Snowball English, so "grasping" finds "grasp"; any other word as it is.
pub fn term(word: &str) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    if word.bytes().all(|b| b.is_ascii_lowercase()) {
        STEMMER.get_or_init(|| Stemmer::create(Algorithm::English)).stem(word).into_owned()
    } else {
        word.to_string()
    }
}

/// English function words that carry no meaning for dedup or ranking.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "how", "if", "in", "into", "is", "it", "its", "of", "on", "or", "so", "than", "that", "the", "then",
    "there", "these", "this", "those", "to", "was", "were", "what", "when", "where", "which", "who", "why", "will",
    "with",
];

pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.binary_search(&w).is_ok()
}

/// A word long enough to mean something: two characters, or any CJK word.
fn is_significant(w: &str) -> bool {
    w.chars().count() > 1 || w.chars().any(is_cjk)
}

/// A word a query searches for: a significant one, or a lone digit — robots name
/// things by number ("pallet 7", "dock 3"). Dedup leaves lone digits to the
/// numbers signature (which must be equal anyway) so they do not count twice.
fn is_query_word(w: &str) -> bool {
    is_significant(w) || (w.len() == 1 && w.as_bytes()[0].is_ascii_digit())
}

/// FTS5 operator words; never sent as operators (queries quote every word anyway).
fn is_fts_operator(w: &str) -> bool {
    matches!(w, "and" | "or" | "not" | "near")
}

/// Most words a recall query sends to FTS5 (bounds the cost of a pasted paragraph).
pub const MAX_QUERY_WORDS: usize = 32;

/// The distinct query words in order: significant or lone digits, not FTS5 operators; English
/// stopwords dropped unless nothing else is left.
pub fn query_words(query: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for_each_word(query, |w| {
        if is_query_word(w) && !is_fts_operator(w) && !all.iter().any(|x| x == w) {
            all.push(w.to_string());
        }
    });
    let content: Vec<String> = all.iter().filter(|w| !is_stopword(w)).cloned().collect();
    let mut chosen = if content.is_empty() { all } else { content };
    chosen.truncate(MAX_QUERY_WORDS);
    chosen
}

/// Builds an FTS5 MATCH expression `"w1" OR "w2" …` from words. `None` when there
/// is nothing to search for. Words never contain `"` (they are letters/digits only).
pub fn fts_or_query<S: AsRef<str>>(words: &[S]) -> Option<String> {
    if words.is_empty() {
        return None;
    }
    let mut q = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            q.push_str(" OR ");
        }
        q.push('"');
        q.push_str(w.as_ref());
        q.push('"');
    }
    Some(q)
}

/// The FTS5 MATCH string recall runs for a query.
pub fn fts_query(query: &str) -> Option<String> {
    fts_or_query(&query_words(query))
}

/// Word-set Jaccard above which two texts say the same thing: consolidation merges
/// them (with the same numbers) and grouped recall folds them into one hit.
pub const SIMILAR_JACCARD: f64 = 0.50;

/// The set of meaningful words dedup and consolidation compare.
pub fn term_set(text: &str) -> BTreeSet<String> {
    term_sequence(text).into_iter().collect()
}

/// Whether dedup and consolidation compare this word (see [`term_sequence`]).
pub fn is_dedup_word(w: &str) -> bool {
    is_significant(w) && !is_stopword(w)
}

/// The same words as [`term_set`], each once, in order of first occurrence.
pub fn term_sequence(text: &str) -> Vec<String> {
    let mut seq: Vec<String> = Vec::new();
    for_each_word(text, |w| {
        if is_dedup_word(w) && !seq.iter().any(|x| x == w) {
            seq.push(w.to_string());
        }
    });
    seq
}

/// Jaccard similarity of two term sets; 0 when both are empty.
pub fn jaccard_sets(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Jaccard similarity of the term sets of two texts.
pub fn jaccard(a: &str, b: &str) -> f64 {
    jaccard_sets(&term_set(a), &term_set(b))
}

/// The numbers written in a text, canonicalised ("12.50" → "12.5", "007" → "7") and
/// sorted. Two memories whose numbers differ report different facts.
pub fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            out.push(canonical_number(&text[start..i]));
        } else {
            i += 1;
        }
    }
    out.sort();
    out
}

fn canonical_number(s: &str) -> String {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    }
}

/// Short display summary of a memory's content (at most 80 characters).
pub fn summarize(content: &str) -> String {
    const MAX: usize = 80;
    if content.chars().count() <= MAX {
        return content.to_string();
    }
    let cut: String = content.chars().take(MAX - 3).collect();
    format!("{}...", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_sorted_for_binary_search() {
        let mut s = STOPWORDS.to_vec();
        s.sort();
        assert_eq!(s, STOPWORDS);
    }

    #[test]
    fn words_split_like_unicode61() {
        assert_eq!(words("grip_force=12.5N OK"), ["grip", "force", "12", "5n", "ok"]);
        assert_eq!(words("如何抓取杯子"), ["如何", "抓取", "杯子"]);
        assert_eq!(words("用UR5e抓取"), ["用", "ur5e", "抓取"]);
    }

    #[test]
    fn fts_query_is_quoted_words_only() {
        assert_eq!(fts_query("robot grasping").as_deref(), Some("\"robot\" OR \"grasping\""));
        assert_eq!(fts_query("test AND (OR) \"hello").as_deref(), Some("\"test\" OR \"hello\""));
        assert_eq!(fts_query("a b c"), None);
        assert_eq!(fts_query("*"), None);
        assert_eq!(fts_query("x\" OR 1=1; --").as_deref(), Some("\"1\""));
        assert_eq!(fts_query("pallet 7 on dock B").as_deref(), Some("\"pallet\" OR \"7\" OR \"dock\""));
        assert_eq!(fts_query("how to grasp a cup").as_deref(), Some("\"grasp\" OR \"cup\""));
        assert_eq!(fts_query("the of").as_deref(), Some("\"the\" OR \"of\""));
    }

    #[test]
    fn numbers_are_canonical() {
        assert_eq!(numbers("12.50N at 007 deg, v1.2"), ["1.2", "12.5", "7"]);
        assert_ne!(numbers("grasp at 12.5N"), numbers("grasp at 15N"));
        assert_eq!(numbers("ends with 3."), ["3"]);
    }

    #[test]
    fn index_text_segments_cjk_only() {
        assert_eq!(index_text("plain 12.5N"), "plain 12.5N");
        assert!(index_text("抓取杯子 ok").contains("抓取 杯子"));
    }

    #[test]
    fn summary_is_bounded() {
        let s = summarize(&"x".repeat(300));
        assert_eq!(s.chars().count(), 80);
        assert_eq!(summarize("short"), "short");
    }
}
