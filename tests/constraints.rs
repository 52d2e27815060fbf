//! Constraints over all memories (issue 12): a recall with context_filter,
//! session or spatial_sort returns min(n, memories satisfying them), the query's
//! matches first by score, then the newest other memories that satisfy them —
//! with spatial_sort the true n nearest of all that satisfy them, whatever the
//! query's words — each hit saying whether it matched. Checked against a brute
//! force over random memories, filters, targets and queries, BM25 only and (with
//! the model) hybrid, where "matched" also covers neighbours above the cosine
//! floor, so only the structure is checked there beyond the nearest set.

mod model;
#[path = "common/rng.rs"]
mod rng;
#[path = "common/scratch.rs"]
mod scratch;

use rng::Rng;

use robotmem::*;

const WORDS: [&str; 16] = [
    "alfa", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima",
    "mike", "november", "oscar", "papa",
];

/// Which memories a filter keeps (the brute force's side of the check).
type Keep = Box<dyn Fn(&Mem) -> bool>;

struct Mem {
    id: i64,
    words: Vec<&'static str>,
    success: bool,
    force: i64,
    pos: Option<[f64; 2]>,
}

fn learn(db: &Db, r: &mut Rng, count: usize) -> Vec<Mem> {
    (0..count)
        .map(|i| {
            let words: Vec<&str> = (0..2 + r.below(3)).map(|_| WORDS[r.below(WORDS.len())]).collect();
            let (success, force) = (r.below(2) == 0, r.below(30) as i64);
            let pos = (r.below(8) != 0).then(|| [r.unit() * 10.0, r.unit() * 10.0]);
            let mut ctx = serde_json::json!({"task": {"success": success}, "params": {"force": force}});
            if let Some(p) = pos {
                ctx["spatial"] = serde_json::json!({"pos": p});
            }
            // The unit number keeps memories of the same words apart (dedup never
            // merges different numbers).
            let text = format!("{} unit {i}", words.join(" "));
            let ctx = ctx.to_string();
            let o = db.learn(&LearnRequest { insight: &text, context: Some(&ctx), ..Default::default() }).unwrap();
            assert!(o.duplicate.is_none(), "{text}");
            Mem { id: o.memory_id, words, success, force, pos }
        })
        .collect()
}

/// One random recall and its check against the brute force.
fn check(db: &Db, mems: &[Mem], r: &mut Rng, hybrid: bool) {
    let query: Vec<&str> = (0..1 + r.below(2)).map(|_| WORDS[r.below(WORDS.len())]).collect();
    let query = query.join(" ");
    let n = 1 + r.below(12);
    let (filter, keep): (Option<String>, Keep) = match r.below(3) {
        0 => (None, Box::new(|_| true)),
        1 => {
            let s = r.below(2) == 0;
            (Some(format!(r#"{{"task.success": {s}}}"#)), Box::new(move |m: &Mem| m.success == s))
        }
        _ => {
            let lo = r.below(30) as i64;
            (Some(format!(r#"{{"params.force": {{"$gte": {lo}}}}}"#)), Box::new(move |m: &Mem| m.force >= lo))
        }
    };
    let spatial = r.below(2) == 0;
    let target = [r.unit() * 10.0, r.unit() * 10.0];
    let max_d = (r.below(2) == 0).then(|| 1.0 + r.unit() * 5.0);
    let dist =
        |m: &Mem| m.pos.map_or(f64::INFINITY, |p| ((p[0] - target[0]).powi(2) + (p[1] - target[1]).powi(2)).sqrt());
    let sort = spatial.then(|| match max_d {
        Some(d) => {
            format!(r#"{{"field": "spatial.pos", "target": [{}, {}], "max_distance": {d}}}"#, target[0], target[1])
        }
        None => format!(r#"{{"field": "spatial.pos", "target": [{}, {}]}}"#, target[0], target[1]),
    });
    if filter.is_none() && !spatial {
        return; // unconstrained: matches only (tests/engine.rs)
    }
    let req = RecallRequest {
        query: &query,
        n: n as i64,
        context_filter: filter.as_deref(),
        spatial_sort: sort.as_deref(),
        ..Default::default()
    };
    let got = db.recall(&req).unwrap();
    let what = format!("{query:?} n={n} filter={filter:?} spatial={sort:?}");
    let satisfying: Vec<&Mem> =
        mems.iter().filter(|m| keep(m) && (!spatial || max_d.is_none_or(|d| dist(m) <= d))).collect();
    assert_eq!(got.hits.len(), n.min(satisfying.len()), "{what}");
    let by_id = |id: i64| {
        satisfying.iter().find(|m| m.id == id).copied().unwrap_or_else(|| panic!("{what}: #{id} does not satisfy"))
    };
    let shares = |m: &Mem| m.words.iter().any(|w| query.split(' ').any(|q| q == *w));
    for h in &got.hits {
        let m = by_id(h.memory.id);
        if !hybrid {
            assert_eq!(h.matched, shares(m), "{what}: #{} matched", m.id);
        } else if shares(m) {
            assert!(h.matched, "{what}: #{} holds a query word", m.id);
        }
        assert_eq!(h.score == 0.0, !h.matched, "{what}: score of #{}", m.id);
    }
    if spatial {
        let mut want: Vec<&Mem> = satisfying.clone();
        want.sort_by(|a, b| dist(a).total_cmp(&dist(b)));
        let got_d: Vec<f64> = got.hits.iter().map(|h| h.distance.unwrap()).collect();
        let want_d: Vec<f64> = want.iter().take(n).map(|m| dist(m)).collect();
        for (g, w) in got_d.iter().zip(&want_d) {
            assert!(g == w || (g - w).abs() < 1e-9, "{what}: distances {got_d:?} want {want_d:?}");
        }
    } else {
        let first_unmatched = got.hits.iter().position(|h| !h.matched).unwrap_or(got.hits.len());
        assert!(got.hits[first_unmatched..].iter().all(|h| !h.matched), "{what}: matches first");
        let returned: Vec<i64> = got.hits.iter().map(|h| h.memory.id).collect();
        // The tail: the newest satisfying memories the matches did not take.
        let mut rest: Vec<i64> =
            satisfying.iter().map(|m| m.id).filter(|id| !returned[..first_unmatched].contains(id)).collect();
        rest.sort_unstable_by(|a, b| b.cmp(a));
        // (Exact in hybrid recall too: fewer matches than n means both lists ran dry.)
        assert_eq!(&returned[first_unmatched..], &rest[..returned.len() - first_unmatched], "{what}");
    }
}

/// Forgets, moves (a new text, position and filter values) and adds memories
/// between recalls, so the in-process coordinates of spatial_sort and values of
/// context_filter must follow the table.
fn mutate(db: &Db, mems: &mut Vec<Mem>, r: &mut Rng, round: usize) {
    for _ in 0..5 {
        let m = mems.remove(r.below(mems.len()));
        db.forget(m.id, "test").unwrap();
    }
    for k in 0..5 {
        let i = r.below(mems.len());
        let words: Vec<&'static str> = (0..2 + r.below(3)).map(|_| WORDS[r.below(WORDS.len())]).collect();
        let pos = (r.below(8) != 0).then(|| [r.unit() * 10.0, r.unit() * 10.0]);
        let (success, force) = (r.below(2) == 0, r.below(30) as i64);
        let mut ctx = serde_json::json!({"task": {"success": success}, "params": {"force": force}});
        if let Some(p) = pos {
            ctx["spatial"] = serde_json::json!({"pos": p});
        }
        let text = format!("{} moved {round} {k}", words.join(" "));
        db.update(mems[i].id, &text, Some(&ctx.to_string())).unwrap();
        mems[i].words = words;
        mems[i].pos = pos;
        (mems[i].success, mems[i].force) = (success, force);
    }
    let offset = mems.iter().map(|m| m.id).max().unwrap_or(0) as usize;
    let fresh = learn(db, r, 10);
    assert!(fresh.iter().all(|m| m.id as usize > offset));
    mems.extend(fresh);
}

fn run(opts: OpenOptions, hybrid: bool, cases: usize) {
    let db = Db::open(opts).unwrap();
    let mut r = Rng(0x5eed_0012);
    let mut mems = learn(&db, &mut r, 150);
    for _ in 0..cases {
        check(&db, &mems, &mut r, hybrid);
    }
    for round in 0..3 {
        mutate(&db, &mut mems, &mut r, round);
        for _ in 0..cases / 4 {
            check(&db, &mems, &mut r, hybrid);
        }
    }
    // Sessions: every memory of the session, whatever the query.
    let s = db.start_session(None, None).unwrap();
    let mut ids = Vec::new();
    for i in 0..4 {
        let text = format!("quebec romeo session note {i}");
        ids.push(
            db.learn(&LearnRequest { insight: &text, session_id: Some(&s.session_id), ..Default::default() })
                .unwrap()
                .memory_id,
        );
    }
    let got = db
        .recall(&RecallRequest { query: "alfa", n: 10, session_id: Some(&s.session_id), ..Default::default() })
        .unwrap();
    let mut got_ids: Vec<i64> = got.hits.iter().map(|h| h.memory.id).collect();
    if hybrid {
        got_ids.sort_unstable(); // a vector above the floor makes a memory a match, ranked first
    } else {
        assert!(got.hits.iter().all(|h| !h.matched));
        ids.reverse(); // newest first
    }
    assert_eq!(got_ids, ids);
}

#[test]
fn constraints_hold_over_all_memories_bm25() {
    let dir = scratch::Scratch::new("constraints");
    run(OpenOptions { embeddings: false, durability: Durability::Normal, ..OpenOptions::path(dir.db()) }, false, 400);
}

#[test]
fn constraints_hold_over_all_memories_hybrid() {
    let Some(m) = model::default_model("constraints (hybrid)") else { return };
    let dir = scratch::Scratch::new("constraints-hybrid");
    run(m.options(dir.db()), true, 150);
}

/// Every kind of value a context holds (numbers, strings, booleans, null,
/// arrays, objects, missing paths), filtered with every operator, more paths
/// than the columns hold, after changes: the same memories as the brute force.
#[test]
fn filters_of_every_value_kind_agree_with_the_brute_force() {
    use serde_json::{json, Value};
    let db = Db::open(OpenOptions { embeddings: false, ..OpenOptions::in_memory() }).unwrap();
    let mut r = Rng(0x5eed_0013);
    let value = |r: &mut Rng| -> Option<Value> {
        Some(match r.below(9) {
            0 => return None,
            1 => json!(r.below(5)),
            2 => json!(r.below(5) as f64 + 0.5),
            3 => json!(["ab", "b", "c"][r.below(3)]),
            4 => json!(r.below(2) == 0),
            5 => Value::Null,
            6 => json!([r.below(2), 1]),
            7 => json!({"k": r.below(2)}),
            _ => json!(2),
        })
    };
    let paths: Vec<String> = (0..10).map(|k| format!("p{k}.v")).collect();
    let mut ctxs: Vec<(i64, Value)> = Vec::new();
    let make = |r: &mut Rng| {
        let mut ctx = json!({});
        for (k, _) in paths.iter().enumerate() {
            if let Some(v) = value(r) {
                ctx[format!("p{k}")] = json!({ "v": v });
            }
        }
        ctx
    };
    // A serial number in every text: dedup never merges different numbers.
    let mut serial = 0;
    let mut text = || {
        serial += 1;
        format!("kilo reading {serial}")
    };
    let learn = |db: &Db, text: String, ctx: &Value| {
        let o =
            db.learn(&LearnRequest { insight: &text, context: Some(&ctx.to_string()), ..Default::default() }).unwrap();
        assert!(o.duplicate.is_none(), "{text}");
        o.memory_id
    };
    for _ in 0..300 {
        let ctx = make(&mut r);
        ctxs.push((learn(&db, text(), &ctx), ctx));
    }
    let ops = ["$eq", "$ne", "$lt", "$lte", "$gt", "$gte"];
    for round in 0..4 {
        for _ in 0..60 {
            let mut filter = serde_json::Map::new();
            for _ in 0..1 + r.below(10) {
                let path = paths[r.below(paths.len())].clone();
                let operand = value(&mut r).unwrap_or(json!(1));
                let cond = if r.below(3) == 0 { operand } else { json!({ ops[r.below(ops.len())]: operand }) };
                filter.insert(path, cond);
            }
            let f = Value::Object(filter).to_string();
            // No searchable word: the newest satisfying ones; "kilo": every memory
            // matches, so the best-ranked satisfying ones.
            let query = ["*", "kilo reading"][r.below(2)];
            let got =
                db.recall(&RecallRequest { query, n: 100, context_filter: Some(&f), ..Default::default() }).unwrap();
            let got: Vec<i64> = got.hits.iter().map(|h| h.memory.id).collect();
            let parsed = robotmem::internals::search::ContextFilter::parse(&f).unwrap();
            let mut want: Vec<i64> = ctxs.iter().filter(|(_, c)| parsed.matches(c)).map(|(id, _)| *id).collect();
            want.sort_unstable_by(|a, b| b.cmp(a));
            if query == "*" || want.len() <= 100 {
                want.truncate(100);
                let mut sorted = got.clone();
                sorted.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(if query == "*" { got } else { sorted }, want, "round {round} {query:?}: {f}");
            } else {
                assert_eq!(got.len(), 100, "round {round} {query:?}: {f}");
                assert!(got.iter().all(|id| want.contains(id)), "round {round} {query:?}: {f}");
            }
        }
        // Change some contexts, forget some, add some.
        for _ in 0..20 {
            let i = r.below(ctxs.len());
            let ctx = make(&mut r);
            db.update(ctxs[i].0, &text(), Some(&ctx.to_string())).unwrap();
            ctxs[i].1 = ctx;
        }
        for _ in 0..10 {
            let (id, _) = ctxs.remove(r.below(ctxs.len()));
            db.forget(id, "test").unwrap();
        }
        for _ in 0..20 {
            let ctx = make(&mut r);
            ctxs.push((learn(&db, text(), &ctx), ctx));
        }
    }
}

/// Filtered and spatial recalls on several threads while another thread learns,
/// changes and forgets: every hit satisfies the filter as stored when it was read
/// (the columns and coordinates are synced, copied when a recall holds them), and
/// nothing deadlocks.
#[test]
fn filtered_recalls_run_beside_writes() {
    let dir = scratch::Scratch::new("constraints-threads");
    let db = Db::open(OpenOptions { embeddings: false, durability: Durability::Normal, ..OpenOptions::path(dir.db()) })
        .unwrap();
    let mut r = Rng(0x5eed_0014);
    let mems = learn(&db, &mut r, 200);
    let ids: Vec<i64> = mems.iter().map(|m| m.id).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut r = Rng(0x5eed_0015);
            for round in 0..150 {
                let id = ids[r.below(ids.len())];
                let ctx = serde_json::json!({"task": {"success": r.below(2) == 0}, "params": {"force": r.below(30)},
                                             "spatial": {"pos": [r.unit() * 10.0, r.unit() * 10.0]}});
                let _ = db.update(id, &format!("alfa bravo changed {round}"), Some(&ctx.to_string()));
                if round % 10 == 0 {
                    let _ = db.forget(ids[r.below(ids.len())], "test");
                }
                let ctx = serde_json::json!({"task": {"success": true}, "params": {"force": round % 30}}).to_string();
                db.learn(&LearnRequest {
                    insight: &format!("alfa charlie fresh {round}"),
                    context: Some(&ctx),
                    ..Default::default()
                })
                .unwrap();
            }
        });
        for t in 0..2u64 {
            let db = &db;
            s.spawn(move || {
                let mut r = Rng(0x5eed_0016 + t);
                for _ in 0..150 {
                    let lo = r.below(30);
                    let filter = format!(r#"{{"task.success": true, "params.force": {{"$gte": {lo}}}}}"#);
                    let sort = (r.below(2) == 0).then(|| r#"{"field": "spatial.pos", "target": [5, 5]}"#.to_string());
                    let req = RecallRequest {
                        query: "alfa",
                        n: 10,
                        context_filter: Some(&filter),
                        spatial_sort: sort.as_deref(),
                        ..Default::default()
                    };
                    for h in db.recall(&req).unwrap().hits {
                        let ctx: serde_json::Value = serde_json::from_str(&h.memory.context).unwrap();
                        assert_eq!(ctx["task"]["success"], serde_json::json!(true), "{filter}: #{}", h.memory.id);
                        assert!(ctx["params"]["force"].as_u64().unwrap() >= lo as u64, "{filter}: #{}", h.memory.id);
                    }
                }
            });
        }
    });
}
