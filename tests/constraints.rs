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
    let dist = |m: &Mem| m.pos.map_or(f64::INFINITY, |p| ((p[0] - target[0]).powi(2) + (p[1] - target[1]).powi(2)).sqrt());
    let sort = spatial.then(|| match max_d {
        Some(d) => format!(r#"{{"field": "spatial.pos", "target": [{}, {}], "max_distance": {d}}}"#, target[0], target[1]),
        None => format!(r#"{{"field": "spatial.pos", "target": [{}, {}]}}"#, target[0], target[1]),
    });
    if filter.is_none() && !spatial {
        return; // unconstrained: matches only (tests/engine.rs)
    }
    let req = RecallRequest { query: &query, n: n as i64, context_filter: filter.as_deref(), spatial_sort: sort.as_deref(), ..Default::default() };
    let got = db.recall(&req).unwrap();
    let what = format!("{query:?} n={n} filter={filter:?} spatial={sort:?}");
    let satisfying: Vec<&Mem> =
        mems.iter().filter(|m| keep(m) && (!spatial || max_d.is_none_or(|d| dist(m) <= d))).collect();
    assert_eq!(got.hits.len(), n.min(satisfying.len()), "{what}");
    let by_id = |id: i64| satisfying.iter().find(|m| m.id == id).copied().unwrap_or_else(|| panic!("{what}: #{id} does not satisfy"));
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
        let mut rest: Vec<i64> = satisfying.iter().map(|m| m.id).filter(|id| !returned[..first_unmatched].contains(id)).collect();
        rest.sort_unstable_by(|a, b| b.cmp(a));
        // (Exact in hybrid recall too: fewer matches than n means both lists ran dry.)
        assert_eq!(&returned[first_unmatched..], &rest[..returned.len() - first_unmatched], "{what}");
    }
}

/// Forgets, moves (a new text and position) and adds memories between recalls,
/// so the in-process coordinates of spatial_sort must follow the table.
fn mutate(db: &Db, mems: &mut Vec<Mem>, r: &mut Rng, round: usize) {
    for _ in 0..5 {
        let m = mems.remove(r.below(mems.len()));
        db.forget(m.id, "test").unwrap();
    }
    for k in 0..5 {
        let i = r.below(mems.len());
        let words: Vec<&'static str> = (0..2 + r.below(3)).map(|_| WORDS[r.below(WORDS.len())]).collect();
        let pos = (r.below(8) != 0).then(|| [r.unit() * 10.0, r.unit() * 10.0]);
        let mut ctx = serde_json::json!({"task": {"success": mems[i].success}, "params": {"force": mems[i].force}});
        if let Some(p) = pos {
            ctx["spatial"] = serde_json::json!({"pos": p});
        }
        let text = format!("{} moved {round} {k}", words.join(" "));
        db.update(mems[i].id, &text, Some(&ctx.to_string())).unwrap();
        mems[i].words = words;
        mems[i].pos = pos;
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
        ids.push(db.learn(&LearnRequest { insight: &text, session_id: Some(&s.session_id), ..Default::default() }).unwrap().memory_id);
    }
    let got = db.recall(&RecallRequest { query: "alfa", n: 10, session_id: Some(&s.session_id), ..Default::default() }).unwrap();
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
