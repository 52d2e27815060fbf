//! A sentence-transformer ONNX model run by ONNX Runtime on the CPU: tokenise
//! (the model's `tokenizer.json`, truncated to the model's limit, padded to the
//! longest text of the batch), run, pool under the attention mask, normalise.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ort::session::{Session, SessionInputValue};
use ort::value::TensorRef;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use tokenizers::TruncationParams;

use super::sessions::{self, Sessions};
use super::unigram::{self, Tokenizer};

use super::{
    normalize, pool, unavailable, Embedder, Embedding, Inputs, ModelConfig, ModelStamp, TextKind, MAX_UNKNOWN_FRACTION,
};
use crate::error::Result;

pub struct OnnxEmbedder {
    /// `Session::run` needs `&mut`: one text (or batch of texts) per session at a
    /// time; a batch spreads over up to `embed_threads` sessions.
    sessions: Sessions<Worker, tokenizers::Encoding, Vec<f32>>,
    /// Model runs made (tests and benchmarks read it: how many texts a run took).
    runs: std::sync::atomic::AtomicU64,
    tokenizer: Tokenizer,
    cfg: ModelConfig,
    stamp: ModelStamp,
    /// Whether the model takes `token_type_ids` (BERT-style models do).
    type_ids: bool,
    /// Id of the unknown token, if the vocabulary has one.
    unk_id: Option<u32>,
    input_names: Vec<String>,
}

/// A session and the input buffers its runs reuse.
struct Worker {
    session: Session,
    scratch: Scratch,
}

/// The input buffers of one session, kept between its runs.
#[derive(Default)]
struct Scratch {
    ids: Vec<i64>,
    mask: Vec<i64>,
    types: Vec<i64>,
    ragged_ids: Vec<i32>,
    splits: Vec<i64>,
}

/// An input tensor borrowing `data`.
fn tensor<'a, T: ort::value::PrimitiveTensorElementType + std::fmt::Debug + Clone + 'static, const N: usize>(
    shape: [i64; N],
    data: &'a [T],
) -> Result<SessionInputValue<'a>> {
    Ok(TensorRef::from_array_view((shape, data)).map_err(|e| unavailable(format!("input tensor: {e}")))?.into())
}

/// `buf` cleared and resized to `len` zeros, keeping its allocation.
fn zeroed<T: Copy + Default>(buf: &mut Vec<T>, len: usize) -> &mut [T] {
    buf.clear();
    buf.resize(len, T::default());
    buf
}

/// Texts tokenised for one model run: the encodings of the representable ones
/// and, per text, whether it was left out as unrepresentable.
struct Prepared {
    enc: Vec<tokenizers::Encoding>,
    skip: Vec<bool>,
}

impl OnnxEmbedder {
    /// Opens the model of `dir`. The stamp hash (the model files' SHA-256) and
    /// the tokenizer parse run on their own threads while ONNX Runtime creates
    /// the session; when several steps fail, the error is the one the
    /// sequential order (tokenizer, hash, session) would give.
    pub fn open(env: &'static ort::environment::Environment, dir: &Path, threads: usize) -> Result<OnnxEmbedder> {
        let cfg = ModelConfig::read(dir)?;
        let model_path = dir.join("model.onnx");
        let tok_path = dir.join("tokenizer.json");
        let tok_bytes =
            std::fs::read(&tok_path).map_err(|e| unavailable(format!("cannot read {}: {e}", tok_path.display())))?;
        let (tokenizer, hash, session) = std::thread::scope(|s| {
            let tokenizer = s.spawn(|| read_tokenizer(&tok_bytes, &tok_path, &cfg));
            // Hashed in pieces and loaded by path: the model files are never held
            // in memory next to the session built from them (a lower peak RSS at open).
            let hash = s.spawn(|| model_hash(dir, &tok_bytes, &cfg));
            let session = sessions::create(env, &model_path);
            (join(tokenizer), join(hash), session)
        });
        let tokenizer = tokenizer?;
        let hash = hash.map_err(|(path, e)| unavailable(format!("cannot read {}: {e}", path.display())))?;
        let session = session?;
        let stamp = ModelStamp { name: cfg.name.clone(), dim: cfg.dim, hash };
        let names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        let required: &[&str] = match cfg.inputs {
            Inputs::Padded => &["input_ids", "attention_mask"],
            Inputs::Ragged => &[],
        };
        for r in required {
            if !names.contains(r) {
                return Err(unavailable(format!(
                    "{} has no input {r:?} (inputs: {names:?}); not a sentence-transformer model",
                    model_path.display()
                )));
            }
        }
        if cfg.inputs == Inputs::Ragged && names.len() != 2 {
            return Err(unavailable(format!(
                "{} takes {} inputs; \"inputs\": \"ragged\" needs two (token ids, row boundaries)",
                model_path.display(),
                names.len()
            )));
        }
        let input_names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let type_ids = names.contains(&"token_type_ids");
        let unk_id = ["[UNK]", "<unk>"].iter().find_map(|t| tokenizer.token_to_id(t));
        let worker = |session| Worker { session, scratch: Scratch::default() };
        let sessions =
            Sessions::new(worker(session), threads, move || sessions::create(env, &model_path).ok().map(worker));
        let runs = Default::default();
        Ok(OnnxEmbedder { sessions, runs, tokenizer, cfg, stamp, type_ids, unk_id, input_names })
    }

    /// The model's inputs for `enc`, written into `scratch` (reused from run to
    /// run) and borrowed from it. Padded: ids, attention mask (and token types),
    /// `[batch, seq]`. Ragged: every text's ids concatenated (int32) and the row
    /// boundaries `[0, n1, n1 + n2, ...]` (int64), as TensorFlow-exported models take.
    fn inputs<'s>(
        &self,
        scratch: &'s mut Scratch,
        enc: &[&tokenizers::Encoding],
        seq: usize,
    ) -> Result<Vec<(String, SessionInputValue<'s>)>> {
        let batch = enc.len();
        match self.cfg.inputs {
            Inputs::Padded => {
                let ids = zeroed(&mut scratch.ids, batch * seq);
                let mask = zeroed(&mut scratch.mask, batch * seq);
                let types = zeroed(&mut scratch.types, batch * seq);
                for (b, e) in enc.iter().enumerate() {
                    for (t, ((&id, &m), &ty)) in
                        e.get_ids().iter().zip(e.get_attention_mask()).zip(e.get_type_ids()).enumerate()
                    {
                        ids[b * seq + t] = id as i64;
                        mask[b * seq + t] = m as i64;
                        types[b * seq + t] = ty as i64;
                    }
                }
                let shape = [batch as i64, seq as i64];
                let mut inputs = vec![
                    ("input_ids".into(), tensor(shape, &scratch.ids)?),
                    ("attention_mask".into(), tensor(shape, &scratch.mask)?),
                ];
                if self.type_ids {
                    inputs.push(("token_type_ids".into(), tensor(shape, &scratch.types)?));
                }
                Ok(inputs)
            }
            Inputs::Ragged => {
                let (ids, splits) = (&mut scratch.ragged_ids, &mut scratch.splits);
                ids.clear();
                splits.clear();
                splits.push(0);
                for e in enc {
                    ids.extend(e.get_ids().iter().map(|&i| i as i32));
                    splits.push(ids.len() as i64);
                }
                let (names, n, rows) = (&self.input_names, ids.len() as i64, splits.len() as i64);
                Ok(vec![
                    (names[0].clone(), tensor([n], &scratch.ragged_ids)?),
                    (names[1].clone(), tensor([rows], &scratch.splits)?),
                ])
            }
        }
    }

    /// Model runs made so far by this embedder.
    pub fn runs(&self) -> u64 {
        self.runs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether too many of a text's (non-special) tokens are unknown to the model.
    fn unrepresentable(&self, e: &tokenizers::Encoding) -> bool {
        let Some(unk) = self.unk_id else { return false };
        let (mut words, mut unknown) = (0usize, 0usize);
        for (&id, &special) in e.get_ids().iter().zip(e.get_special_tokens_mask()) {
            if special == 0 {
                words += 1;
                unknown += (id == unk) as usize;
            }
        }
        words > 0 && unknown as f32 > words as f32 * MAX_UNKNOWN_FRACTION
    }

    /// Vectors of every text, representable or not (for comparisons with a
    /// reference implementation; the engine uses [`Embedder::embed`]).
    pub fn embed_ungated(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        Ok(self.run_chunked(&texts, false)?.into_iter().filter_map(|e| e.vector().map(<[f32]>::to_vec)).collect())
    }

    /// Most texts per model run (0 in the configuration: no limit).
    fn per_run(&self, texts: usize) -> usize {
        match self.cfg.max_batch {
            0 => texts.max(1),
            m => m,
        }
    }

    /// Runs the model on at most `max_batch` texts at a time. A few texts (a
    /// learn, a query) share the sessions with other callers
    /// ([`Sessions::shared`]); more (a batch) run on several sessions at once (one
    /// thread each) when the model may have more sessions than one.
    fn run_chunked(&self, texts: &[String], gate: bool) -> Result<Vec<Embedding>> {
        if texts.len() <= self.per_run(texts.len()).min(sessions::MAX_SHARED_RUN) {
            let p = self.prepare(texts, gate)?;
            let max_run = self.per_run(sessions::MAX_SHARED_RUN);
            let vectors = match p.enc.is_empty() {
                true => Vec::new(),
                false => self.sessions.shared(p.enc, max_run, |w, enc| self.run_encoded(w, enc))?,
            };
            return Ok(assemble(&p.skip, vectors));
        }
        let chunks: Vec<&[String]> = texts.chunks(self.per_run(texts.len())).collect();
        let workers = self.sessions.size().min(chunks.len());
        if workers <= 1 {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in chunks {
                out.extend(self.run_batch(chunk, gate, false)?);
            }
            return Ok(out);
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Mutex<Option<Result<Vec<Embedding>>>>> = chunks.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else { break };
            let r = self.run_batch(chunk, gate, true);
            let failed = r.is_err();
            *done[i].lock() = Some(r);
            if failed {
                next.store(chunks.len(), std::sync::atomic::Ordering::Relaxed); // the others stop too
            }
        };
        std::thread::scope(|s| {
            for _ in 1..workers {
                let _ = std::thread::Builder::new().name("robotmem-embed".into()).spawn_scoped(s, work);
            }
            work();
        });
        let mut out = Vec::with_capacity(texts.len());
        for d in done {
            match d.into_inner() {
                Some(r) => out.extend(r?),
                None => return Err(unavailable("a model run was not made (another failed first)")),
            }
        }
        Ok(out)
    }

    /// Tokenises `texts`; with `gate`, leaves out the unrepresentable ones.
    fn prepare(&self, texts: &[String], gate: bool) -> Result<Prepared> {
        // One by one: encode_batch would start a rayon thread pool inside the robot's process.
        let enc = texts
            .iter()
            .map(|t| self.tokenizer.encode(t.as_str(), true))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| unavailable(format!("tokenizer: {e}")))?;
        let skip: Vec<bool> = enc.iter().map(|e| gate && self.unrepresentable(e)).collect();
        let enc = enc.into_iter().zip(&skip).filter(|(_, s)| !**s).map(|(e, _)| e).collect();
        Ok(Prepared { enc, skip })
    }

    /// One model run of a batch's chunk; `grow`: a session may be made for it
    /// when the others are busy.
    fn run_batch(&self, texts: &[String], gate: bool, grow: bool) -> Result<Vec<Embedding>> {
        let p = self.prepare(texts, gate)?;
        if p.enc.is_empty() {
            return Ok(assemble(&p.skip, Vec::new()));
        }
        let enc: Vec<&tokenizers::Encoding> = p.enc.iter().collect();
        let vectors = self.sessions.with(grow, |w| self.run_encoded(w, &enc))?;
        Ok(assemble(&p.skip, vectors))
    }

    /// Runs the model on `enc` and pools its output into one (normalised, if so
    /// configured) vector per text.
    fn run_encoded(&self, w: &mut Worker, enc: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>> {
        let (dim, batch) = (self.cfg.dim, enc.len());
        let seq = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(0).max(1);
        let inputs = self.inputs(&mut w.scratch, enc, seq)?;
        self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let outputs = w.session.run(inputs).map_err(|e| unavailable(format!("model run failed: {e}")))?;
        let (out_shape, data) =
            outputs[0].try_extract_tensor::<f32>().map_err(|e| unavailable(format!("model output: {e}")))?;
        let dims: Vec<i64> = out_shape.iter().copied().collect();
        let mut vectors: Vec<Vec<f32>> = match dims.as_slice() {
            [b, s, d] if *b == batch as i64 && *s == seq as i64 && *d == dim as i64 => {
                // Text i's attention mask covers its own tokens; the padding after them is left out.
                (0..batch)
                    .map(|i| {
                        let mask: Vec<i64> = enc[i].get_attention_mask().iter().map(|&m| m as i64).collect();
                        pool(&data[i * seq * dim..(i + 1) * seq * dim], &mask, dim, self.cfg.pooling)
                    })
                    .collect()
            }
            [b, d] if *b == batch as i64 && *d == dim as i64 => data.chunks(dim).map(<[f32]>::to_vec).collect(),
            _ => {
                return Err(unavailable(format!(
                    "model output has shape {dims:?}; expected [{batch}, {seq}, {dim}] or [{batch}, {dim}] \
                     (check dim in robotmem-model.json)"
                )))
            }
        };
        if self.cfg.normalize {
            vectors.iter_mut().for_each(|v| normalize(v));
        }
        Ok(vectors)
    }
}

/// One embedding per text: `Unrepresentable` where `skip`, else the next of `vectors`.
fn assemble(skip: &[bool], vectors: Vec<Vec<f32>>) -> Vec<Embedding> {
    let mut vectors = vectors.into_iter();
    skip.iter()
        .map(|&s| match s {
            true => Embedding::Unrepresentable,
            false => vectors.next().map_or(Embedding::Unrepresentable, Embedding::Vector),
        })
        .collect()
}

impl Embedder for OnnxEmbedder {
    fn stamp(&self) -> &ModelStamp {
        &self.stamp
    }

    fn fusion(&self) -> super::FusionConfig {
        self.cfg.fusion
    }

    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Embedding>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = match kind {
            TextKind::Query => &self.cfg.query_prefix,
            TextKind::Passage => &self.cfg.passage_prefix,
        };
        let texts: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        self.run_chunked(&texts, true)
    }
}

/// The result of a scoped thread (its panic, if it panicked, goes on unwinding here).
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The tokenizer of `tokenizer.json`, truncating to the model's limit, not padding.
fn read_tokenizer(bytes: &[u8], path: &Path, cfg: &ModelConfig) -> Result<Tokenizer> {
    let mut tokenizer = unigram::from_bytes(bytes)
        .map_err(|e| unavailable(format!("{} is not a usable tokenizer: {e}", path.display())))?;
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: cfg.max_tokens, ..Default::default() }))
        .map_err(|e| unavailable(format!("tokenizer truncation: {e}")))?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

/// Stamp hash: the bytes of `model.onnx` and, when there is one, of its external
/// data `model.data` (each after its length), the tokenizer bytes and every
/// setting that changes vectors. An error names the file it is about.
fn model_hash(dir: &Path, tokenizer: &[u8], cfg: &ModelConfig) -> std::result::Result<String, (PathBuf, io::Error)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let model = dir.join("model.onnx");
    let f = std::fs::File::open(&model).map_err(|e| (model.clone(), e))?;
    hash_file(&mut h, f, &mut buf).map_err(|e| (model, e))?;
    let data = dir.join("model.data");
    match std::fs::File::open(&data) {
        Ok(f) => hash_file(&mut h, f, &mut buf).map_err(|e| (data, e))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err((data, e)),
    }
    h.update((tokenizer.len() as u64).to_le_bytes());
    h.update(tokenizer);
    h.update(format!(
        "{:?}|{}|{}|{:?}|{:?}",
        cfg.pooling, cfg.normalize, cfg.max_tokens, cfg.query_prefix, cfg.passage_prefix
    ));
    Ok(h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect())
}

/// Feeds the length of `f`, then its bytes, to `h`; fails if the file does not
/// hold as many bytes as its length says (it changed while being read).
fn hash_file(h: &mut Sha256, mut f: std::fs::File, buf: &mut [u8]) -> io::Result<()> {
    let len = f.metadata()?.len();
    h.update(len.to_le_bytes());
    let mut read = 0u64;
    loop {
        match f.read(buf)? {
            0 => break,
            n => {
                h.update(&buf[..n]);
                read += n as u64;
            }
        }
    }
    if read != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("{read} bytes read, length {len}")));
    }
    Ok(())
}
