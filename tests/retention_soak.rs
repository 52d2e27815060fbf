//! Retention soak: 10 simulated days of 2,000 learns each under a budget of
//! 1,000 memories (BM25 only). Each day 3% of the learns are constraints, 10%
//! are learned already expired (an expiry that passed during the day: the test
//! moves no clock, it gives those memories an expiry in the past) and 10% are
//! forgotten right after; a purge runs every 500 learns. After every learn: the
//! evictions follow the order (expired first, then forgotten, then active) and
//! never touch a constraint; after every day: within budget, every constraint
//! kept, recall returns no removed memory and the text index holds exactly the
//! stored active memories, also after reopening the file.

#[path = "common/scratch.rs"]
mod scratch;
use std::collections::{HashMap, HashSet};

use robotmem::*;

const DAYS: usize = 10;
const PER_DAY: usize = 2000;
const BUDGET: u64 = 1000;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Constraint,
    Expired,
    Forgotten,
    Plain,
}

fn open(p: &std::path::Path) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    o.max_memories = BUDGET;
    Db::open(o).unwrap()
}

/// The tier eviction must take from next, given what is stored.
fn tier(stored: &HashMap<i64, Kind>) -> Kind {
    [Kind::Expired, Kind::Forgotten].into_iter().find(|k| stored.values().any(|v| v == k)).unwrap_or(Kind::Plain)
}

fn check_day(db: &Db, stored: &HashMap<i64, Kind>, removed: &HashSet<i64>, day: usize) {
    let s = db.stats().unwrap();
    assert!(s.memories as u64 <= BUDGET, "day {day}: {} memories", s.memories);
    assert_eq!(s.memories as usize, stored.len(), "day {day}");
    for (id, k) in stored {
        if *k == Kind::Constraint {
            assert_eq!(db.get(*id).unwrap().category, "constraint", "day {day}: constraint #{id} kept");
        }
    }
    for q in ["conveyor stopped seconds", "arm must never exceed newtons", "pallet aisle", "*"] {
        let r = db.recall_unrecorded(&RecallRequest { query: q, n: 100, min_confidence: 0.0, ..Default::default() });
        for h in r.unwrap().hits {
            assert!(!removed.contains(&h.memory.id), "day {day}: recall {q:?} returned removed #{}", h.memory.id);
        }
    }
    let (text, _) = db.loaded_indexes();
    assert_eq!(text as i64, s.active + s.expired, "day {day}: text index vs stored active memories");
}

/// Purges what left recall (age 0) and checks it was exactly that.
fn purge(db: &Db, stored: &mut HashMap<i64, Kind>, removed: &mut HashSet<i64>, day: usize) -> u64 {
    let out = db.purge(0.0).unwrap();
    let gone: Vec<i64> = stored
        .iter()
        .filter(|(id, k)| matches!(k, Kind::Expired | Kind::Forgotten) && db.get(**id).is_err())
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(gone.len() as u64, out.purged, "day {day}: {out:?}");
    assert!(out.batches <= out.purged.div_ceil(100) + 1, "{out:?}");
    for id in gone {
        stored.remove(&id);
        removed.insert(id);
    }
    out.purged
}

#[test]
fn ten_days_at_2000_learns_a_day_stay_within_1000_and_keep_every_constraint() {
    let d = scratch::Scratch::new("retention-soak");
    let mut db = open(&d.db());
    let mut stored: HashMap<i64, Kind> = HashMap::new();
    let mut removed: HashSet<i64> = HashSet::new();
    let mut constraints = 0;
    let (mut evictions, mut slowest, mut purged) = (HashMap::new(), std::time::Duration::ZERO, 0);
    let started = std::time::Instant::now();
    for day in 0..DAYS {
        for i in 0..PER_DAY {
            let n = day * PER_DAY + i;
            let kind = match i % 100 {
                0..=2 => Kind::Constraint,
                3..=12 => Kind::Expired,
                13..=22 => Kind::Forgotten,
                _ => Kind::Plain,
            };
            let text = match kind {
                Kind::Constraint => format!("the arm must never exceed {n} newtons near fixture {}", n % 97),
                _ => format!("conveyor {n} stopped for {} seconds near pallet aisle {}", n % 600, n % 31),
            };
            let expires_at = (kind == Kind::Expired).then_some("2020-01-01T00:00:00Z");
            let want = tier(&stored);
            let t = std::time::Instant::now();
            let out = db.learn(&LearnRequest { insight: &text, expires_at, ..Default::default() }).unwrap();
            slowest = slowest.max(t.elapsed());
            assert!(out.duplicate.is_none(), "{text}");
            for id in &out.evicted {
                let k = stored.remove(id).unwrap_or_else(|| panic!("evicted #{id} was not stored"));
                assert_ne!(k, Kind::Constraint, "day {day}: a constraint was evicted");
                assert_eq!(k, want, "day {day}: evicted #{id} of {k:?} while {want:?} memories were stored");
                removed.insert(*id);
                *evictions.entry(format!("{k:?}")).or_insert(0) += 1;
            }
            if kind == Kind::Constraint {
                assert_eq!(out.category, "constraint", "{text}");
                constraints += 1;
            }
            stored.insert(out.memory_id, kind);
            if kind == Kind::Forgotten {
                db.forget(out.memory_id, "wrong reading").unwrap();
            }
            if i % 500 == 499 {
                purged += purge(&db, &mut stored, &mut removed, day);
            }
        }
        check_day(&db, &stored, &removed, day);
        if day % 3 == 2 {
            drop(db);
            db = open(&d.db());
            check_day(&db, &stored, &removed, day);
        }
    }
    assert!(evictions.len() == 3 && purged > 0, "every tier evicted, and purged: {evictions:?}, {purged}");
    let kept = stored.values().filter(|k| **k == Kind::Constraint).count();
    assert_eq!(kept, constraints, "every constraint kept");
    drop(db);
    let c = rusqlite::Connection::open(d.db()).unwrap();
    let records: i64 = c.query_row("SELECT count(*) FROM memory_removals", [], |r| r.get(0)).unwrap();
    assert!(records < removed.len() as i64 / 4, "the removal records are pruned: {records} of {}", removed.len());
    let file = std::fs::metadata(d.db()).unwrap().len();
    eprintln!(
        "soak: {} learns, evicted {evictions:?}, purged {purged}, {} removed in all ({records} records kept), \
         {kept} constraints kept, slowest learn {:?}, {:.1} s, file {file} bytes",
        DAYS * PER_DAY,
        removed.len(),
        slowest,
        started.elapsed().as_secs_f64()
    );
}
