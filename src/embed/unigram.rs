//! A SentencePiece Unigram vocabulary held compactly.
//!
//! `tokenizers`' own Unigram model keeps its pieces in a trie whose every node
//! is a hash map: for the 128,000 pieces of the multilingual Universal Sentence
//! Encoder that is about 120 MiB of heap, more than the ONNX model itself.
//! [`CompactUnigram`] holds the same vocabulary in four flat arrays (about
//! 3 MiB): the pieces' bytes back to back, their offsets, their scores, and the
//! piece ids sorted by bytes. The pieces that start a text are found by
//! narrowing a range of that sorted list one byte at a time.
//!
//! The segmentation is `tokenizers`' (`Unigram::encode_optimized`, after
//! SentencePiece's `unigram_model.cc`) step for step: the same Viterbi over
//! byte positions, prefixes visited shortest first, the first best path kept on
//! a tie, an unknown character scored `min_score − 10`, runs of unknown
//! characters fused into one token, a repeated piece mapped to its last id, and
//! byte fallback. Everything around the model (normaliser, pre-tokeniser,
//! post-processor, truncation) stays `tokenizers`' own, through [`Vocab`], so a
//! `tokenizer.json` gives the same ids as before; `tests/unigram.rs` checks it
//! over the development corpora.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::models::{ModelWrapper, TrainerWrapper};
use tokenizers::{Model, Token};

type TokResult<T> = tokenizers::Result<T>;

/// What `tokenizers` adds to the lowest piece score for an unknown character.
const UNK_PENALTY: f64 = 10.0;

/// A Unigram vocabulary: pieces, scores, and a byte-sorted index.
#[derive(Debug, Clone, Default)]
pub struct CompactUnigram {
    bytes: Vec<u8>,
    /// `starts[id]..starts[id + 1]` is piece `id` in `bytes`.
    starts: Vec<u32>,
    scores: Vec<f64>,
    /// Ids of the distinct pieces, sorted by bytes; a repeated piece keeps its last id.
    sorted: Vec<u32>,
    unk_id: Option<u32>,
    byte_fallback: bool,
    min_score: f64,
    longest: usize,
}

impl CompactUnigram {
    /// A vocabulary from `(piece, score)` pairs in id order.
    pub fn new(pieces: Vec<(String, f64)>, unk_id: Option<usize>, byte_fallback: bool) -> Result<Self, String> {
        let mut b = Builder::default();
        for (p, s) in &pieces {
            b.push(p, *s);
        }
        b.finish(unk_id, byte_fallback)
    }

    fn piece(&self, id: u32) -> &[u8] {
        &self.bytes[self.starts[id as usize] as usize..self.starts[id as usize + 1] as usize]
    }

    /// Number of pieces (repeats included), as `tokenizers` counts them.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The id of a piece.
    pub fn id(&self, piece: &[u8]) -> Option<u32> {
        self.sorted.binary_search_by(|&id| self.piece(id).cmp(piece)).ok().map(|i| self.sorted[i])
    }

    /// Calls `found(length, id)` for every piece that starts `text`, shortest first.
    fn prefixes(&self, text: &[u8], mut found: impl FnMut(usize, u32)) {
        let (mut lo, mut hi) = (0usize, self.sorted.len());
        for len in 1..=text.len().min(self.longest) {
            // Every piece in sorted[lo..hi] starts with text[..len - 1]; the one
            // that is exactly that long (if any) sorts first.
            let byte = text[len - 1];
            let range = &self.sorted[lo..hi];
            let first = range.partition_point(|&id| {
                let p = self.piece(id);
                p.len() < len || p[len - 1] < byte
            });
            let count = range[first..].partition_point(|&id| self.piece(id)[len - 1] <= byte);
            if count == 0 {
                return;
            }
            lo += first;
            hi = lo + count;
            if self.piece(self.sorted[lo]).len() == len {
                found(len, self.sorted[lo]);
            }
        }
    }

    /// The best segmentation of `text` (byte ranges and ids; fused unknown runs
    /// carry `unk_id`).
    fn segment(&self, text: &str) -> TokResult<Vec<(usize, usize, u32)>> {
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            score: f64,
            from: Option<usize>,
        }
        let size = text.len();
        let bytes = text.as_bytes();
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![Best { id: 0, score: 0.0, from: None }; size + 1];
        let mut at = 0;
        while at < size {
            let here = best[at].score;
            let char_len = text[at..].chars().next().map_or(1, char::len_utf8);
            let mut whole_char = false;
            self.prefixes(&bytes[at..], |len, id| {
                let candidate = self.scores[id as usize] + here;
                let node = &mut best[at + len];
                if node.from.is_none() || candidate > node.score {
                    *node = Best { id, score: candidate, from: Some(at) };
                }
                whole_char |= len == char_len;
            });
            if !whole_char {
                let unk = self.unk_id.ok_or("an unknown character, and the vocabulary has no unk_id")?;
                let candidate = unk_score + here;
                let node = &mut best[at + char_len];
                if node.from.is_none() || candidate > node.score {
                    *node = Best { id: unk, score: candidate, from: Some(at) };
                }
            }
            at += char_len;
        }
        let mut out: Vec<(usize, usize, u32)> = Vec::new();
        let mut end = size;
        while end > 0 {
            let node = best[end];
            let start = node.from.expect("every char boundary is reached");
            match out.last_mut() {
                Some(last) if Some(node.id) == self.unk_id && Some(last.2) == self.unk_id && last.0 == end => {
                    last.0 = start
                }
                _ => out.push((start, end, node.id)),
            }
            end = start;
        }
        out.reverse();
        Ok(out)
    }
}

impl Model for CompactUnigram {
    type Trainer = TrainerWrapper;

    fn tokenize(&self, sentence: &str) -> TokResult<Vec<Token>> {
        let mut tokens = Vec::new();
        for (start, end, id) in self.segment(sentence)? {
            let value = &sentence[start..end];
            // A fused run of unknown characters may itself be a piece; `tokenizers` looks it up.
            let id = if Some(id) == self.unk_id { self.id(value.as_bytes()) } else { Some(id) };
            match id {
                Some(id) => tokens.push(Token::new(id, value.to_string(), (start, end))),
                None => {
                    let bytes: Option<Vec<Token>> = if self.byte_fallback {
                        value
                            .bytes()
                            .map(|b| {
                                let name = format!("<0x{b:02X}>");
                                self.id(name.as_bytes()).map(|id| Token::new(id, name, (start, end)))
                            })
                            .collect()
                    } else {
                        None
                    };
                    match bytes {
                        Some(b) => tokens.extend(b),
                        None => tokens.push(Token::new(
                            self.unk_id.ok_or("an unknown token, and the vocabulary has no unk_id")?,
                            value.to_string(),
                            (start, end),
                        )),
                    }
                }
            }
        }
        Ok(tokens)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.id(token.as_bytes())
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        ((id as usize) < self.len()).then(|| String::from_utf8_lossy(self.piece(id)).into_owned())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        self.sorted.iter().map(|&id| (String::from_utf8_lossy(self.piece(id)).into_owned(), id)).collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> TokResult<Vec<PathBuf>> {
        Err("robotmem's compact Unigram vocabulary is read-only".into())
    }

    fn get_trainer(&self) -> TrainerWrapper {
        TrainerWrapper::UnigramTrainer(UnigramTrainer::default())
    }
}

/// Collects pieces while the JSON streams by (no `Vec<(String, f64)>` in between).
#[derive(Default)]
struct Builder {
    bytes: Vec<u8>,
    starts: Vec<u32>,
    scores: Vec<f64>,
}

impl Builder {
    fn push(&mut self, piece: &str, score: f64) {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        self.bytes.extend_from_slice(piece.as_bytes());
        self.starts.push(self.bytes.len() as u32);
        self.scores.push(score);
    }

    fn finish(mut self, unk_id: Option<usize>, byte_fallback: bool) -> Result<CompactUnigram, String> {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let n = self.scores.len();
        if n == 0 && unk_id.is_some() {
            return Err("the vocabulary is empty but names an unk_id".into());
        }
        if unk_id.is_some_and(|u| u >= n) {
            return Err(format!("unk_id {} is outside the vocabulary of {n} pieces", unk_id.unwrap_or_default()));
        }
        if self.bytes.len() > u32::MAX as usize {
            return Err("the vocabulary is larger than 4 GiB".into());
        }
        self.bytes.shrink_to_fit();
        let mut u = CompactUnigram {
            min_score: self.scores.iter().copied().fold(f64::INFINITY, f64::min),
            bytes: self.bytes,
            starts: self.starts,
            scores: self.scores,
            sorted: Vec::new(),
            unk_id: unk_id.map(|u| u as u32),
            byte_fallback,
            longest: 0,
        };
        let mut sorted: Vec<u32> = (0..n as u32).collect();
        // Stable: equal pieces stay in id order, and the last one is kept.
        sorted.sort_by(|&a, &b| u.piece(a).cmp(u.piece(b)));
        let mut kept: Vec<u32> = Vec::with_capacity(n);
        for id in sorted {
            match kept.last_mut() {
                Some(last) if u.piece(*last) == u.piece(id) => *last = id,
                _ => kept.push(id),
            }
        }
        kept.shrink_to_fit();
        u.longest = kept.iter().map(|&id| u.piece(id).len()).max().unwrap_or(0);
        u.sorted = kept;
        Ok(u)
    }
}

/// The `vocab` array of a Unigram model, read into a [`Builder`].
struct Pieces(Builder);

impl<'de> Deserialize<'de> for Pieces {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pieces;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of [piece, score] pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Pieces, A::Error> {
                let mut b = Builder::default();
                while let Some((piece, score)) = seq.next_element::<(std::borrow::Cow<'de, str>, f64)>()? {
                    b.push(&piece, score);
                }
                Ok(Pieces(b))
            }
        }
        d.deserialize_seq(V)
    }
}

impl<'de> Deserialize<'de> for CompactUnigram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CompactUnigram;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a Unigram model")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CompactUnigram, A::Error> {
                let (mut pieces, mut unk_id, mut byte_fallback) = (None, None, false);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "vocab" => pieces = Some(map.next_value::<Pieces>()?.0),
                        "unk_id" => unk_id = map.next_value()?,
                        "byte_fallback" => byte_fallback = map.next_value()?,
                        "type" => {
                            let t: std::borrow::Cow<'de, str> = map.next_value()?;
                            if t != "Unigram" {
                                return Err(de::Error::custom(format!("not a Unigram model: {t}")));
                            }
                        }
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                pieces
                    .ok_or_else(|| de::Error::missing_field("vocab"))?
                    .finish(unk_id, byte_fallback)
                    .map_err(de::Error::custom)
            }
        }
        d.deserialize_map(V)
    }
}

/// The model of a `tokenizer.json`: a Unigram vocabulary held compactly, or
/// any other model as `tokenizers` holds it.
// One value per loaded model: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Vocab {
    Unigram(CompactUnigram),
    Other(ModelWrapper),
}

impl<'de> Deserialize<'de> for Vocab {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<std::borrow::Cow<'a, str>>,
        }
        let raw: &'de serde_json::value::RawValue = Deserialize::deserialize(d)?;
        let kind: Kind = serde_json::from_str(raw.get()).map_err(de::Error::custom)?;
        if kind.kind.as_deref() == Some("Unigram") {
            serde_json::from_str(raw.get()).map(Vocab::Unigram).map_err(de::Error::custom)
        } else {
            serde_json::from_str(raw.get()).map(Vocab::Other).map_err(de::Error::custom)
        }
    }
}

impl Model for Vocab {
    type Trainer = TrainerWrapper;

    fn tokenize(&self, sequence: &str) -> TokResult<Vec<Token>> {
        match self {
            Vocab::Unigram(m) => m.tokenize(sequence),
            Vocab::Other(m) => m.tokenize(sequence),
        }
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            Vocab::Unigram(m) => m.token_to_id(token),
            Vocab::Other(m) => m.token_to_id(token),
        }
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        match self {
            Vocab::Unigram(m) => m.id_to_token(id),
            Vocab::Other(m) => m.id_to_token(id),
        }
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        match self {
            Vocab::Unigram(m) => m.get_vocab(),
            Vocab::Other(m) => m.get_vocab(),
        }
    }

    fn get_vocab_size(&self) -> usize {
        match self {
            Vocab::Unigram(m) => m.get_vocab_size(),
            Vocab::Other(m) => m.get_vocab_size(),
        }
    }

    fn save(&self, folder: &Path, prefix: Option<&str>) -> TokResult<Vec<PathBuf>> {
        match self {
            Vocab::Unigram(m) => m.save(folder, prefix),
            Vocab::Other(m) => m.save(folder, prefix),
        }
    }

    fn get_trainer(&self) -> TrainerWrapper {
        match self {
            Vocab::Unigram(m) => m.get_trainer(),
            Vocab::Other(m) => m.get_trainer(),
        }
    }
}

/// A `tokenizer.json` with its model read as a [`Vocab`].
pub type Tokenizer = tokenizers::TokenizerImpl<
    Vocab,
    tokenizers::NormalizerWrapper,
    tokenizers::PreTokenizerWrapper,
    tokenizers::PostProcessorWrapper,
    tokenizers::DecoderWrapper,
>;

/// Reads a `tokenizer.json`.
pub fn from_bytes(json: &[u8]) -> TokResult<Tokenizer> {
    Ok(serde_json::from_slice(json)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::models::unigram::Unigram;

    fn both(pieces: &[(&str, f64)]) -> (CompactUnigram, Unigram) {
        let v: Vec<(String, f64)> = pieces.iter().map(|(p, s)| (p.to_string(), *s)).collect();
        (CompactUnigram::new(v.clone(), Some(0), false).unwrap(), Unigram::from(v, Some(0), false).unwrap())
    }

    fn same(c: &CompactUnigram, u: &Unigram, text: &str) {
        let a: Vec<(u32, String, (usize, usize))> =
            c.tokenize(text).unwrap().into_iter().map(|t| (t.id, t.value, t.offsets)).collect();
        let b: Vec<(u32, String, (usize, usize))> =
            u.tokenize(text).unwrap().into_iter().map(|t| (t.id, t.value, t.offsets)).collect();
        assert_eq!(a, b, "text {text:?}");
    }

    #[test]
    fn segments_like_tokenizers() {
        let (c, u) = both(&[
            ("<unk>", 0.0),
            ("a", -1.0),
            ("b", -2.0),
            ("ab", -2.5),
            ("abc", -3.0),
            ("c", -1.0),
            ("cd", -1.0),
            ("d", -1.0),
            ("ab", -0.5),
            ("é", -1.0),
            ("xx", -4.0),
            ("机器", -2.0),
            ("机", -1.5),
        ]);
        for t in ["", "a", "abcd", "abcdacdxx", "zz", "ézé", "xxx", "机器人", "机器机", "ab ab", "q机q", "xyzzy"]
        {
            same(&c, &u, t);
        }
        assert_eq!(c.token_to_id("ab"), Some(8), "a repeated piece maps to its last id");
        assert_eq!(c.token_to_id("zz"), None);
        assert_eq!(c.id_to_token(3).as_deref(), Some("ab"));
        assert_eq!(c.get_vocab_size(), 13);
    }

    #[test]
    fn ties_keep_the_first_path() {
        // "ab" = "a"+"b" = "ab": equal scores, the shorter prefix is visited first.
        let (c, u) =
            both(&[("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("ab", -2.0), ("bc", -2.0), ("c", -1.0), ("abc", -3.0)]);
        for t in ["ab", "abc", "bcab", "cab"] {
            same(&c, &u, t);
        }
    }

    #[test]
    fn byte_fallback_like_tokenizers() {
        let v: Vec<(String, f64)> = [("<unk>", 0.0), ("<0xC3>", -5.0), ("<0xA9>", -5.0), ("a", -1.0)]
            .iter()
            .map(|(p, s)| (p.to_string(), *s))
            .collect();
        let c = CompactUnigram::new(v.clone(), Some(0), true).unwrap();
        let u = Unigram::from(v, Some(0), true).unwrap();
        for t in ["aéa", "é", "日a"] {
            same(&c, &u, t);
        }
    }

    #[test]
    fn rejects_bad_vocabularies() {
        assert!(CompactUnigram::new(vec![], Some(0), false).is_err());
        assert!(CompactUnigram::new(vec![("a".into(), -1.0)], Some(1), false).is_err());
        let c = CompactUnigram::new(vec![("a".into(), -1.0)], None, false).unwrap();
        assert!(c.tokenize("b").is_err(), "an unknown character needs an unk_id");
    }
}
