//! Phases query (the engine's embedder: tokenising, query and memory texts,
//! batches) and ort (direct ONNX Runtime sessions with other settings or models).

use std::time::Instant;

use ort::environment::Environment;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use robotmem::internals::embed::{self, TextKind};
use serde_json::{json, Map, Value};

use super::util::{embedder, english_queries, english_texts, normalise, query_texts, r3, rss, sample, timed};
use super::{section, Args, Report, QUERY_EMBED_P50_MS};
use crate::stats::{header, Summary};

/// The model's tokenizer as the engine reads it (a Unigram vocabulary held compactly).
pub(super) fn tokenizer(a: &Args) -> embed::unigram::Tokenizer {
    let p = a.model_dir.join("tokenizer.json");
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut t = embed::unigram::from_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    t.with_truncation(Some(tokenizers::TruncationParams { max_length: 256, ..Default::default() }))
        .expect("truncation");
    t.with_padding(None);
    t
}

/// Token ids, attention mask (both padded to the longest text) and their shape.
pub(super) type Input = (Vec<i64>, Vec<i64>, [i64; 2]);

/// One model input of `texts`.
pub(super) fn encode(tok: &embed::unigram::Tokenizer, texts: &[&str]) -> Input {
    let enc: Vec<_> = texts.iter().map(|t| tok.encode(*t, true).unwrap()).collect();
    let seq = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(1);
    let mut ids = vec![0i64; enc.len() * seq];
    let mut mask = vec![0i64; enc.len() * seq];
    for (b, e) in enc.iter().enumerate() {
        for (t, (&id, &m)) in e.get_ids().iter().zip(e.get_attention_mask()).enumerate() {
            ids[b * seq + t] = id as i64;
            mask[b * seq + t] = m as i64;
        }
    }
    (ids, mask, [enc.len() as i64, seq as i64])
}

/// The session inputs of `input` (with all-zero token_type_ids when the model takes them).
pub(super) fn inputs(input: &Input, type_ids: bool) -> Vec<(&'static str, SessionInputValue<'static>)> {
    let (ids, mask, shape) = input;
    let t = |v: Vec<i64>| -> SessionInputValue<'static> { Tensor::from_array((*shape, v)).unwrap().into() };
    let mut inputs = vec![("input_ids", t(ids.clone())), ("attention_mask", t(mask.clone()))];
    if type_ids {
        inputs.push(("token_type_ids", t(vec![0i64; ids.len()])));
    }
    inputs
}

/// A session builder: `threads` intra-op threads (and `inter` inter-op ones), spinning
/// on or off, all graph optimisations.
pub(super) fn session_builder(env: &Environment, threads: usize, inter: Option<usize>, spin: bool) -> SessionBuilder {
    let fail = |e: &dyn std::fmt::Display| -> ! { panic!("ort session: {e}") };
    let mut b = SessionBuilder::new(env).unwrap_or_else(|e| fail(&e));
    b = b.with_intra_threads(threads).unwrap_or_else(|e| fail(&e));
    if let Some(n) = inter {
        b = b.with_inter_threads(n).unwrap_or_else(|e| fail(&e));
    }
    b = b.with_intra_op_spinning(spin).unwrap_or_else(|e| fail(&e));
    b.with_optimization_level(GraphOptimizationLevel::All).unwrap_or_else(|e| fail(&e))
}

pub(super) fn query_phase(a: &Args, rep: &mut Report) {
    let qs = english_queries(a.samples + a.warmup, a.seed);
    let zh = query_texts(a.samples * 8 + 64, true, a.samples + a.warmup, a.seed);
    let mems = english_texts(a.samples * 2 + a.warmup * 2, a.seed ^ 0x51);
    let tok = tokenizer(a);
    let ntok: Vec<u64> = qs.iter().map(|q| tok.encode(*q, true).unwrap().get_ids().len() as u64).collect();
    let ptok: Vec<u64> = mems.iter().map(|m| tok.encode(m.as_str(), true).unwrap().get_ids().len() as u64).collect();
    let med = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    };
    section(&format!(
        "query embedding (English recall queries, median {} tokens; memory texts median {} tokens)",
        med(&ntok),
        med(&ptok)
    ));
    println!("{}", header());
    let mut j = Map::new();
    let lat = sample(a.warmup, qs.len().saturating_sub(a.warmup), |i| timed(|| tok.encode(qs[i], true).unwrap()).1);
    let s = Summary::of(&lat);
    println!("{}", s.row("tokenise only (query)"));
    j.insert("tokenise_query".into(), s.json());

    for &threads in &a.threads {
        let e = embedder(a, threads, 32);
        let mut series = |label: &str, key: String, f: &mut dyn FnMut(usize) -> u64| {
            let s = Summary::of(&sample(a.warmup, a.samples, f));
            println!("{}", s.row(label));
            j.insert(key, s.json());
            s
        };
        let s = series(&format!("query, {threads} thread(s)"), format!("query_t{threads}"), &mut |i| {
            timed(|| e.embed(&[qs[i % qs.len()]], TextKind::Query).unwrap()).1
        });
        rep.target(
            format!("query embedding p50 <= {QUERY_EMBED_P50_MS} ms [embed_threads {threads}]"),
            s.p50,
            s.p50 <= QUERY_EMBED_P50_MS,
        );
        series(&format!("  zh query (gated), {threads}t"), format!("query_zh_t{threads}"), &mut |i| {
            timed(|| e.embed(&[zh[i % zh.len()]], TextKind::Query).unwrap()).1
        });
        series(&format!("memory text, {threads}t"), format!("passage_t{threads}"), &mut |i| {
            timed(|| e.embed(&[mems[i % mems.len()].as_str()], TextKind::Passage).unwrap()).1
        });
        // Batches of 32 memory texts: per-text cost.
        let mut k = 0;
        let per = series(
            &format!("  per text, batch 32, {threads}t"),
            format!("passage_batch32_per_text_t{threads}"),
            &mut |_| {
                let chunk: Vec<&str> = (0..32).map(|x| mems[(k + x) % mems.len()].as_str()).collect();
                k += 32;
                timed(|| e.embed(&chunk, TextKind::Passage).unwrap()).1 / 32
            },
        );
        println!("    = {:.0} texts/s of pure embedding in batches of 32", 1e3 / per.mean);
    }
    rep.json.insert("query".into(), Value::Object(j));
}

/// Direct ONNX Runtime sessions with other settings than the engine's (threads,
/// intra-op spinning) and, with `--alt-model`, other model files, on the same
/// tokenised inputs: what a change in src/embed/onnx.rs or of the shipped model
/// would give. For each model: session creation time, VmRSS growth while the
/// session lives, and how close its sentence vectors are to the main model's.
pub(super) fn ort_phase(a: &Args, rep: &mut Report) {
    let env = embed::runtime::environment(Some(&a.ort)).expect("ONNX Runtime");
    let tok = tokenizer(a);
    let qs = english_queries(64, a.seed);
    let mems = english_texts(256, a.seed ^ 0x51);
    let single: Vec<Input> = qs.iter().map(|q| encode(&tok, &[q])).collect();
    let passages: Vec<Input> = mems.iter().take(100).map(|m| encode(&tok, &[m.as_str()])).collect();
    let batches: Vec<Input> = (0..8)
        .map(|i| {
            let chunk: Vec<&str> = (0..32).map(|x| mems[(i * 32 + x) % mems.len()].as_str()).collect();
            encode(&tok, &chunk)
        })
        .collect();
    // Runs one input; returns (model-run ns, mean-pooled unit vector of the first text).
    let run = |s: &mut Session, input: &Input, type_ids: bool| -> (u64, Vec<f32>) {
        let (_, mask, shape) = input;
        let inputs = inputs(input, type_ids);
        let started = Instant::now();
        let out = s.run(inputs).expect("run");
        let (_, data) = out[0].try_extract_tensor::<f32>().expect("output");
        let dt = started.elapsed().as_nanos() as u64;
        let seq = shape[1] as usize;
        let dim = data.len() / (shape[0] as usize * seq);
        let mut v = embed::pool(&data[..seq * dim], &mask[..seq], dim, embed::Pooling::Mean);
        normalise(&mut v);
        (dt, v)
    };
    section("ONNX Runtime sessions (model run only: no tokenising, no pooling)");
    let mut j = Map::new();
    let mut models = vec![a.model_dir.join("model.onnx")];
    models.extend(a.alt_models.iter().cloned());
    let mut reference: Vec<Vec<f32>> = Vec::new();
    for (mi, path) in models.iter().enumerate() {
        let model = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.display().to_string();
        println!("  model {name} ({:.1} MB){}", model.len() as f64 / 1e6, if mi == 0 { ", the engine's" } else { "" });
        println!("{}", header());
        let mut jm = Map::new();
        let mut variants: Vec<(usize, bool)> = Vec::new();
        for &t in &a.threads {
            variants.push((t as usize, false));
            variants.push((t as usize, true));
        }
        for (vi, (threads, spin)) in variants.into_iter().enumerate() {
            let rss0 = rss();
            let started = Instant::now();
            let mut b = session_builder(env, threads, Some(1), spin);
            let mut s = b.commit_from_memory(&model).unwrap_or_else(|e| panic!("ort session: {e}"));
            let create_ms = started.elapsed().as_secs_f64() * 1e3;
            let type_ids = s.inputs().iter().any(|i| i.name() == "token_type_ids");
            let mut series = |inputs: &[Input], n: usize, per: u64| -> Summary {
                let w = a.warmup.min(10);
                Summary::of(&sample(w, n, |i| run(&mut s, &inputs[i % inputs.len()], type_ids).0 / per))
            };
            let label = format!("{threads}t spin {}", if spin { "on " } else { "off" });
            let q = series(&single, a.samples, 1);
            let p = series(&passages, a.samples, 1);
            let b = series(&batches, (a.samples / 10).max(8), 32);
            let grown = rss() - rss0;
            println!("{}", q.row(&format!("query, {label}")));
            println!("{}", p.row(&format!("  memory text, {label}")));
            println!("{}", b.row("  per text, batch 32"));
            println!("    session created in {create_ms:.0} ms; VmRSS +{grown:.1} MiB while it lives");
            let mut jv = json!({"query": q.json(), "passage": p.json(), "batch32_per_text": b.json(),
                                "create_ms": r3(create_ms), "rss_growth_mib": r3(grown)});
            if vi == 0 {
                // Agreement with the engine's model on the memory texts.
                let vs: Vec<Vec<f32>> = passages.iter().map(|x| run(&mut s, x, type_ids).1).collect();
                if mi == 0 {
                    reference = vs;
                } else {
                    let cos: Vec<f64> = vs
                        .iter()
                        .zip(&reference)
                        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p * q) as f64).sum())
                        .collect();
                    let min = cos.iter().cloned().fold(f64::INFINITY, f64::min);
                    let mean = cos.iter().sum::<f64>() / cos.len() as f64;
                    println!(
                        "    cosine to the engine model's vectors over {} memory texts: min {min:.4}, mean {mean:.4}",
                        cos.len()
                    );
                    jv["cosine_to_main"] = json!({"min": r3(min * 10.0) / 10.0, "mean": r3(mean * 10.0) / 10.0});
                }
            }
            jm.insert(format!("t{threads}_spin{}", spin as u8), jv);
            drop(s);
        }
        j.insert(name, Value::Object(jm));
    }
    rep.json.insert("ort".into(), Value::Object(j));
}
