//! `--replay`: an operation file of `--emit` sent to `robotmem::Db`, one timed
//! call at a time. The summary has the same shape as scripts/peer_bench.py's.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use robotmem::{Db, DupMethod, Durability, LearnRequest, Location, OpenOptions, RecallRequest};
use serde_json::{json, Map, Value};

use crate::stats::{header, mib, proc_status_kb, Summary};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    All,
    Learn,
    Recall,
}

pub struct Replay {
    pub ops: PathBuf,
    pub db: PathBuf,
    pub durability: Durability,
    pub phase: Phase,
    pub ranked: Option<PathBuf>,
}

pub fn parse(argv: &[String]) -> Result<Replay, String> {
    let mut r = Replay {
        ops: PathBuf::new(),
        db: PathBuf::new(),
        durability: Durability::Normal,
        phase: Phase::All,
        ranked: None,
    };
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--replay" => r.ops = PathBuf::from(value()?),
            "--db" => r.db = PathBuf::from(value()?),
            "--ranked" => r.ranked = Some(PathBuf::from(value()?)),
            "--durability" => {
                r.durability = match value()?.as_str() {
                    "normal" => Durability::Normal,
                    "full" => Durability::Full,
                    d => return Err(format!("--durability: expected normal or full, got {d}")),
                }
            }
            "--phase" => {
                r.phase = match value()?.as_str() {
                    "all" => Phase::All,
                    "learn" => Phase::Learn,
                    "recall" => Phase::Recall,
                    p => return Err(format!("--phase: expected all, learn or recall, got {p}")),
                }
            }
            other => return Err(format!("unknown argument {other:?} for --replay")),
        }
    }
    if r.db.as_os_str().is_empty() {
        return Err("--replay needs --db FILE".into());
    }
    if r.phase != Phase::Recall && r.db.exists() {
        return Err(format!("{} exists: a learn phase needs a fresh database file", r.db.display()));
    }
    if r.phase == Phase::Recall && !r.db.exists() {
        return Err(format!("{} does not exist: --phase recall needs a learned database", r.db.display()));
    }
    Ok(r)
}

struct LearnOp {
    key: u64,
    text: String,
    context: Option<String>,
}

struct RecallOp {
    kind: String,
    query: String,
    n: i64,
    filter: Option<String>,
    spatial: Option<String>,
    gold: Option<Vec<u64>>,
    zh: bool,
    warmup: bool,
}

struct Ops {
    meta: Value,
    learns: Vec<LearnOp>,
    recalls: Vec<RecallOp>,
}

fn load_ops(path: &Path) -> Result<Ops, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut ops = Ops { meta: Value::Null, learns: Vec::new(), recalls: Vec::new() };
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let at = |e: String| format!("{}:{}: {e}", path.display(), i + 1);
        let v: Value = serde_json::from_str(&line.map_err(|e| at(e.to_string()))?).map_err(|e| at(e.to_string()))?;
        let s = |k: &str| v[k].as_str().map(str::to_string);
        match (v["type"].as_str(), v["op"].as_str()) {
            (Some("meta"), _) => ops.meta = v.clone(),
            (_, Some("learn")) => ops.learns.push(LearnOp {
                key: v["key"].as_u64().ok_or_else(|| at("learn without key".into()))?,
                text: s("text").ok_or_else(|| at("learn without text".into()))?,
                context: s("context"),
            }),
            (_, Some("recall")) => ops.recalls.push(RecallOp {
                kind: s("kind").unwrap_or_else(|| "plain".into()),
                query: s("query").ok_or_else(|| at("recall without query".into()))?,
                n: v["n"].as_i64().unwrap_or(5),
                filter: s("filter"),
                spatial: s("spatial"),
                gold: v["gold"].as_array().map(|g| g.iter().filter_map(Value::as_u64).collect()),
                zh: v["zh"].as_bool().unwrap_or(false),
                warmup: v["warmup"].as_bool().unwrap_or(false),
            }),
            _ => return Err(at(format!("unknown line {v}"))),
        }
    }
    Ok(ops)
}

/// Results of the measured recalls of one kind (or of all).
#[derive(Default)]
struct KindStats {
    lat: Vec<u64>,
    hits: usize,
    empty: usize,
    /// Fewer hits than asked for.
    short: usize,
    gold_n: usize,
    gold_hits: usize,
    /// Hits whose content is no learned text (should stay 0).
    unmapped: usize,
}

impl KindStats {
    fn json(&self) -> Value {
        let s = Summary::of(&self.lat);
        let busy = self.lat.iter().sum::<u64>() as f64 / 1e9;
        let mut j = s.json();
        let n = self.lat.len().max(1) as f64;
        j["per_s"] = json!(if busy > 0.0 { (self.lat.len() as f64 / busy).round() } else { 0.0 });
        j["avg_hits"] = json!((self.hits as f64 / n * 1e3).round() / 1e3);
        j["empty"] = json!(self.empty);
        j["short"] = json!(self.short);
        j["unmapped"] = json!(self.unmapped);
        if self.gold_n > 0 {
            j["gold_n"] = json!(self.gold_n);
            j["gold_hits"] = json!(self.gold_hits);
            j["hit_rate"] = json!((self.gold_hits as f64 / self.gold_n as f64 * 1e4).round() / 1e4);
        }
        j
    }
}

fn file_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .map(|s| std::fs::metadata(format!("{}{s}", db.display())).map(|m| m.len()).unwrap_or(0))
        .sum()
}

/// User + system CPU time of this process so far (/proc/self/stat, 100 ticks a second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<u64> =
        stat.rsplit_once(')').map(|x| x.1).unwrap_or("").split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

/// The journal mode a database file records in its header (byte 18: 1 legacy, 2 WAL).
fn header_journal(db: &Path) -> &'static str {
    let mut h = [0u8; 20];
    let ok = std::fs::File::open(db).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut h)).is_ok();
    match (ok, h[18]) {
        (true, 2) => "wal",
        (true, 1) => "rollback (delete/truncate/persist)",
        _ => "unknown",
    }
}

pub fn run(r: &Replay) -> Result<Value, String> {
    let ops = load_ops(&r.ops)?;
    // The memory a hit stands for: its text is the text of the first learn op
    // that has it (the peer side matches the same way).
    let mut ordinal: HashMap<&str, usize> = HashMap::with_capacity(ops.learns.len());
    for (i, l) in ops.learns.iter().enumerate() {
        ordinal.entry(l.text.as_str()).or_insert(i);
    }
    let rss_start = proc_status_kb("VmRSS");
    let t = Instant::now();
    let db = Db::open(OpenOptions {
        location: Location::Path(r.db.clone()),
        durability: r.durability,
        embeddings: false,
        ..OpenOptions::default()
    })
    .map_err(|e| format!("open {}: {e}", r.db.display()))?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let rss_open = proc_status_kb("VmRSS");
    let corpus = ops.meta["corpus"].as_str().unwrap_or("?").to_string();
    eprintln!("[robotmem {corpus}] {} learns, {} recalls -> {}", ops.learns.len(), ops.recalls.len(), r.db.display());

    let mut learn = Value::Null;
    if r.phase != Phase::Recall {
        learn = learn_phase(&db, &ops.learns)?;
    }
    let hwm_learn = proc_status_kb("VmHWM");
    let mut recall = Value::Null;
    let mut by_filter = Value::Null;
    if r.phase != Phase::Learn {
        let (rec, filt) = recall_phase(&db, &ops, &ordinal, r.ranked.as_deref())?;
        recall = rec;
        by_filter = filt;
    }
    drop(db);
    let out = json!({
        "bench": "peer-replay",
        "system": "robotmem",
        "version": robotmem::VERSION,
        "corpus": corpus,
        "memories": ops.learns.len(),
        "phase": format!("{:?}", r.phase).to_lowercase(),
        "embeddings": false,
        "sqlite": {
            "journal_mode": header_journal(&r.db),
            "synchronous": match r.durability { Durability::Normal => "normal", Durability::Full => "full" },
        },
        "open_ms": (open_ms * 1e3).round() / 1e3,
        "learn": learn,
        "recall": recall,
        "by_filter": by_filter,
        "rss_start_kb": rss_start,
        "rss_after_open_kb": rss_open,
        "hwm_after_learn_kb": hwm_learn,
        "peak_rss_kb": proc_status_kb("VmHWM"),
        "cpu_s": cpu_seconds(),
        "db_bytes": file_bytes(&r.db),
    });
    print_report(&out);
    println!("{out}");
    Ok(out)
}

fn learn_phase(db: &Db, learns: &[LearnOp]) -> Result<Value, String> {
    let mut lat = Vec::with_capacity(learns.len());
    let (mut exact, mut near) = (0usize, 0usize);
    let started = Instant::now();
    for (i, l) in learns.iter().enumerate() {
        let req = LearnRequest { insight: &l.text, context: l.context.as_deref(), ..Default::default() };
        let t = Instant::now();
        let out = db.learn(&req);
        lat.push(t.elapsed().as_nanos() as u64);
        let out = out.map_err(|e| format!("learn #{i} (key {}) {:?}: {e}", l.key, l.text))?;
        match out.duplicate.map(|d| d.method) {
            Some(DupMethod::Exact) => exact += 1,
            Some(_) => near += 1,
            None => {}
        }
        if (i + 1) % (learns.len() / 10).max(1) == 0 {
            eprint!("\r  learn {}/{} ({:.0} s)", i + 1, learns.len(), started.elapsed().as_secs_f64());
        }
    }
    eprintln!();
    let wall = started.elapsed().as_secs_f64();
    let busy = lat.iter().sum::<u64>() as f64 / 1e9;
    let mut j = Summary::of(&lat).json();
    j["wall_s"] = json!((wall * 1e3).round() / 1e3);
    j["per_s"] = json!((lat.len() as f64 / busy.max(1e-9)).round());
    j["stored"] = json!(learns.len() - exact - near);
    j["duplicates"] = json!({"exact": exact, "jaccard": near});
    j["errors"] = json!({});
    Ok(j)
}

fn recall_phase(
    db: &Db,
    ops: &Ops,
    ordinal: &HashMap<&str, usize>,
    ranked_out: Option<&Path>,
) -> Result<(Value, Value), String> {
    let mut ranked_file = match ranked_out {
        Some(p) => {
            Some(std::io::BufWriter::new(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?))
        }
        None => None,
    };
    let mut kinds: Vec<(String, KindStats)> = Vec::new();
    let mut all = KindStats::default();
    let (mut en, mut zh) = (Vec::new(), Vec::new());
    let mut filters: Vec<(String, usize, usize, usize)> = Vec::new(); // filter, n, hits, empty
    let mut first_ms = 0.0;
    for (i, q) in ops.recalls.iter().enumerate() {
        let req = RecallRequest {
            query: &q.query,
            n: q.n,
            context_filter: q.filter.as_deref(),
            spatial_sort: q.spatial.as_deref(),
            ..Default::default()
        };
        let t = Instant::now();
        let out = db.recall(&req);
        let dt = t.elapsed().as_nanos() as u64;
        let out = out.map_err(|e| format!("recall #{i} {:?}: {e}", q.query))?;
        if i == 0 {
            first_ms = dt as f64 / 1e6;
        }
        if q.warmup {
            continue;
        }
        let ords: Vec<Option<usize>> =
            out.hits.iter().map(|h| ordinal.get(h.memory.content.as_str()).copied()).collect();
        if let Some(w) = ranked_file.as_mut() {
            writeln!(w, "{}", json!({"i": i, "ranked": ords})).map_err(|e| e.to_string())?;
        }
        let idx = match kinds.iter().position(|k| k.0 == q.kind) {
            Some(x) => x,
            None => {
                kinds.push((q.kind.clone(), KindStats::default()));
                kinds.len() - 1
            }
        };
        for k in [&mut kinds[idx].1, &mut all] {
            k.lat.push(dt);
            k.hits += out.hits.len();
            k.empty += out.hits.is_empty() as usize;
            k.short += (out.hits.len() < q.n as usize) as usize;
            k.unmapped += ords.iter().filter(|o| o.is_none()).count();
            if let Some(g) = &q.gold {
                k.gold_n += 1;
                let found = ords.iter().flatten().any(|&o| g.contains(&ops.learns[o].key));
                k.gold_hits += found as usize;
            }
        }
        if q.zh { &mut zh } else { &mut en }.push(dt);
        if let Some(f) = &q.filter {
            let e = match filters.iter().position(|x| &x.0 == f) {
                Some(x) => x,
                None => {
                    filters.push((f.clone(), 0, 0, 0));
                    filters.len() - 1
                }
            };
            filters[e].1 += 1;
            filters[e].2 += out.hits.len();
            filters[e].3 += out.hits.is_empty() as usize;
        }
    }
    if let Some(mut w) = ranked_file {
        w.flush().map_err(|e| e.to_string())?;
    }
    let mut rec = Map::new();
    for (k, s) in &kinds {
        rec.insert(k.clone(), s.json());
    }
    rec.insert("all".into(), all.json());
    rec.insert("english".into(), Summary::of(&en).json());
    rec.insert("chinese".into(), Summary::of(&zh).json());
    rec.insert("first_ms".into(), json!((first_ms * 1e3).round() / 1e3));
    let filt: Map<String, Value> = filters
        .into_iter()
        .map(|(f, n, hits, empty)| {
            (f, json!({"n": n, "avg_hits": (hits as f64 / n.max(1) as f64 * 1e3).round() / 1e3, "empty": empty}))
        })
        .collect();
    Ok((Value::Object(rec), Value::Object(filt)))
}

/// The plain-text part of the report (from the JSON, so both replayers print alike).
fn print_report(out: &Value) {
    let row = |label: &str, j: &Value| {
        let s = Summary {
            n: j["n"].as_u64().unwrap_or(0) as usize,
            mean: j["mean_ms"].as_f64().unwrap_or(0.0),
            p50: j["p50_ms"].as_f64().unwrap_or(0.0),
            p95: j["p95_ms"].as_f64().unwrap_or(0.0),
            p99: j["p99_ms"].as_f64().unwrap_or(0.0),
            max: j["max_ms"].as_f64().unwrap_or(0.0),
        };
        format!("{}   {:>7.0}/s", s.row(label), j["per_s"].as_f64().unwrap_or(0.0))
    };
    println!();
    println!(
        "robotmem {} replay of {} ({} learns), embeddings off, sqlite {}",
        out["version"].as_str().unwrap_or("?"),
        out["corpus"].as_str().unwrap_or("?"),
        out["memories"],
        out["sqlite"]
    );
    println!("{}", header());
    if let Some(l) = out["learn"].as_object() {
        println!("{}", row("learn", &out["learn"]));
        println!("  learn wall {} s, stored {}, duplicates {}", l["wall_s"], l["stored"], l["duplicates"]);
    }
    if let Some(r) = out["recall"].as_object() {
        for (k, v) in r.iter().filter(|(_, v)| v.get("avg_hits").is_some()) {
            let gold = v.get("hit_rate").map(|h| format!(", gold in top n {h}")).unwrap_or_default();
            println!(
                "{}   avg hits {}, empty {}, short {}{gold}",
                row(&format!("recall {k}"), v),
                v["avg_hits"],
                v["empty"],
                v["short"]
            );
        }
    }
    println!(
        "  peak RSS (VmHWM) {:.1} MiB, after open {:.1} MiB; database {:.1} MiB",
        mib(out["peak_rss_kb"].as_u64().unwrap_or(0)),
        mib(out["rss_after_open_kb"].as_u64().unwrap_or(0)),
        out["db_bytes"].as_u64().unwrap_or(0) as f64 / 1048576.0
    );
}
