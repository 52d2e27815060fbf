//! A sentence-transformer ONNX model run by ONNX Runtime on the CPU: tokenise
//! (the model's `tokenizer.json`, truncated to the model's limit, padded to the
//! longest text of the batch), run, pool under the attention mask, normalise.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
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
    sessions: Sessions,
    tokenizer: Tokenizer,
    cfg: ModelConfig,
    stamp: ModelStamp,
    /// Whether the model takes `token_type_ids` (BERT-style models do).
    type_ids: bool,
    /// Id of the unknown token, if the vocabulary has one.
    unk_id: Option<u32>,
    input_names: Vec<String>,
}

/// An input tensor.
fn tensor<T: ort::value::PrimitiveTensorElementType + std::fmt::Debug + Clone + 'static, const N: usize>(
    (shape, data): ([i64; N], Vec<T>),
) -> Result<SessionInputValue<'static>> {
    Ok(Tensor::from_array((shape, data)).map_err(|e| unavailable(format!("input tensor: {e}")))?.into())
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
        let sessions = Sessions::new(env, model_path, session, threads);
        Ok(OnnxEmbedder { sessions, tokenizer, cfg, stamp, type_ids, unk_id, input_names })
    }

    /// BERT-style inputs: ids, attention mask (and token types), padded to `seq`.
    fn padded_inputs(
        &self,
        enc: &[tokenizers::Encoding],
        seq: usize,
        mask: &mut [i64],
    ) -> Result<Vec<(String, SessionInputValue<'static>)>> {
        let batch = enc.len();
        let mut ids = vec![0i64; batch * seq];
        let mut types = vec![0i64; batch * seq];
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
            ("input_ids".to_string(), tensor((shape, ids))?),
            ("attention_mask".to_string(), tensor((shape, mask.to_vec()))?),
        ];
        if self.type_ids {
            inputs.push(("token_type_ids".to_string(), tensor((shape, types))?));
        }
        Ok(inputs)
    }

    /// Ragged inputs: every text's ids concatenated (int32) and the row
    /// boundaries `[0, n1, n1 + n2, ...]` (int64), as TensorFlow-exported models take.
    fn ragged_inputs(&self, enc: &[tokenizers::Encoding]) -> Result<Vec<(String, SessionInputValue<'static>)>> {
        let mut ids: Vec<i32> = Vec::new();
        let mut splits: Vec<i64> = vec![0];
        for e in enc {
            ids.extend(e.get_ids().iter().map(|&i| i as i32));
            splits.push(ids.len() as i64);
        }
        let n = ids.len() as i64;
        let rows = splits.len() as i64;
        Ok(vec![
            (self.input_names[0].clone(), tensor(([n], ids))?),
            (self.input_names[1].clone(), tensor(([rows], splits))?),
        ])
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

    /// Runs the model on at most `max_batch` texts at a time; several runs at
    /// once (one thread and session each) when there are more runs than one and
    /// the model may have more sessions than one.
    fn run_chunked(&self, texts: &[String], gate: bool) -> Result<Vec<Embedding>> {
        let per_run = if self.cfg.max_batch == 0 { texts.len() } else { self.cfg.max_batch };
        let chunks: Vec<&[String]> = texts.chunks(per_run.max(1)).collect();
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

    /// One model run; `grow`: a session may be made for it when the others are busy.
    fn run_batch(&self, texts: &[String], gate: bool, grow: bool) -> Result<Vec<Embedding>> {
        // One by one: encode_batch would start a rayon thread pool inside the robot's process.
        let enc = texts
            .iter()
            .map(|t| self.tokenizer.encode(t.as_str(), true))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| unavailable(format!("tokenizer: {e}")))?;
        let skip: Vec<bool> = enc.iter().map(|e| gate && self.unrepresentable(e)).collect();
        let enc: Vec<_> = enc.into_iter().zip(&skip).filter(|(_, s)| !**s).map(|(e, _)| e).collect();
        if enc.is_empty() {
            return Ok(vec![Embedding::Unrepresentable; texts.len()]);
        }
        let batch = enc.len();
        let seq = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(0).max(1);
        let mut mask = vec![0i64; batch * seq];
        let inputs = match self.cfg.inputs {
            Inputs::Padded => self.padded_inputs(&enc, seq, &mut mask)?,
            Inputs::Ragged => self.ragged_inputs(&enc)?,
        };
        let pooled = self.sessions.with(grow, |session| self.pooled(session, inputs, batch, seq, &mask))?;
        let mut vectors = pooled.into_iter().map(|mut v| {
            if self.cfg.normalize {
                normalize(&mut v);
            }
            Embedding::Vector(v)
        });
        Ok(skip
            .iter()
            .map(|&s| if s { Embedding::Unrepresentable } else { vectors.next().expect("one per text") })
            .collect())
    }

    /// Runs `session` on `inputs` (`batch` texts of at most `seq` tokens) and pools
    /// its output into one vector per text.
    fn pooled(
        &self,
        session: &mut Session,
        inputs: Vec<(String, SessionInputValue<'static>)>,
        batch: usize,
        seq: usize,
        mask: &[i64],
    ) -> Result<Vec<Vec<f32>>> {
        let dim = self.cfg.dim;
        let outputs = session.run(inputs).map_err(|e| unavailable(format!("model run failed: {e}")))?;
        let (out_shape, data) =
            outputs[0].try_extract_tensor::<f32>().map_err(|e| unavailable(format!("model output: {e}")))?;
        let dims: Vec<i64> = out_shape.iter().copied().collect();
        Ok(match dims.as_slice() {
            [b, s, d] if *b == batch as i64 && *s == seq as i64 && *d == dim as i64 => (0..batch)
                .map(|i| {
                    pool(
                        &data[i * seq * dim..(i + 1) * seq * dim],
                        &mask[i * seq..(i + 1) * seq],
                        dim,
                        self.cfg.pooling,
                    )
                })
                .collect(),
            [b, d] if *b == batch as i64 && *d == dim as i64 => data.chunks(dim).map(<[f32]>::to_vec).collect(),
            _ => {
                return Err(unavailable(format!(
                    "model output has shape {dims:?}; expected [{batch}, {seq}, {dim}] or [{batch}, {dim}] \
                     (check dim in robotmem-model.json)"
                )))
            }
        })
    }
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
