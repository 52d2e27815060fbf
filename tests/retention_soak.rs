//! Retention soak on a simulated clock (`OpenOptions::clock`): 10 days of 2,000
//! learns each, one every 43.2 s of the clock, under a budget of 1,000 memories
//! (BM25 only). Each day 3% of the learns are constraints, 10% are learned with
//! a time to live of 1 minute to 6 hours (they expire as the clock moves on), 10%
//! are forgotten right after, and a recall every 10 learns reads the memories of
//! a recent aisle (access counts, recency); a purge of what left recall over 6
//! hours ago runs every 500 learns. After every learn: each eviction comes from
//! the tier the order names at that time (expired by the clock first, then
//! forgotten, then active) and never a constraint; after each purge: exactly the
//! memories expired or forgotten 6 hours before the clock's time went; after
//! every day: within budget, every constraint kept, recall returns no removed
//! and no expired memory, and the text index holds exactly the stored active
//! memories, also after reopening the file.

#[path = "common/scratch.rs"]
mod scratch;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use robotmem::*;

const DAYS: usize = 10;
const PER_DAY: usize = 2000;
const BUDGET: u64 = 1000;
/// 2030-01-01T00:00:00Z.
const START_MS: i64 = 1_893_456_000_000;
const DAY_MS: i64 = 86_400_000;
const STEP_MS: i64 = DAY_MS / PER_DAY as i64;
const PURGE_AGE_S: f64 = 6.0 * 3600.0;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Constraint,
    /// Learned with a time to live; expired once the clock passes `expires`.
    Expiring {
        expires: i64,
    },
    Forgotten {
        at: i64,
    },
    Plain,
}

/// What eviction sees of a memory at `now`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
enum Tier {
    Expired,
    Forgotten,
    Active,
    Protected,
}

fn tier_of(k: Kind, now: i64) -> Tier {
    match k {
        Kind::Constraint => Tier::Protected,
        Kind::Expiring { expires } if expires <= now => Tier::Expired,
        Kind::Forgotten { .. } => Tier::Forgotten,
        _ => Tier::Active,
    }
}

fn open(p: &std::path::Path, clock: &Arc<AtomicI64>) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    o.max_memories = BUDGET;
    let c = clock.clone();
    o.clock = Clock::new(move || c.load(Ordering::SeqCst));
    Db::open(o).unwrap()
}

fn check_day(db: &Db, stored: &HashMap<i64, Kind>, removed: &HashSet<i64>, day: usize, now: i64) {
    let s = db.stats().unwrap();
    assert!(s.memories as u64 <= BUDGET, "day {day}: {} memories", s.memories);
    assert_eq!(s.memories as usize, stored.len(), "day {day}");
    let expired = stored.values().filter(|k| tier_of(**k, now) == Tier::Expired).count();
    assert_eq!(s.expired as usize, expired, "day {day}: expired by the clock");
    for (id, k) in stored {
        if *k == Kind::Constraint {
            assert_eq!(db.get(*id).unwrap().category, "constraint", "day {day}: constraint #{id} kept");
        }
    }
    for q in ["conveyor stopped seconds", "arm must never exceed newtons", "pallet aisle", "*"] {
        let r = db.recall_unrecorded(&RecallRequest { query: q, n: 100, min_confidence: 0.0, ..Default::default() });
        for h in r.unwrap().hits {
            let id = h.memory.id;
            assert!(!removed.contains(&id), "day {day}: recall {q:?} returned removed #{id}");
            let t = tier_of(stored[&id], now);
            assert!(matches!(t, Tier::Active | Tier::Protected), "day {day}: recall {q:?} returned #{id}, {t:?}");
        }
    }
    let (text, _) = db.loaded_indexes();
    assert_eq!(text as i64, s.active + s.expired, "day {day}: text index vs stored active memories");
}

/// The ids stored in the file (read with SQL: cheaper than a get of each).
fn ids(path: &std::path::Path) -> HashSet<i64> {
    let c = rusqlite::Connection::open(path).unwrap();
    let mut st = c.prepare("SELECT id FROM memories").unwrap();
    let ids = st.query_map([], |r| r.get::<_, i64>(0)).unwrap();
    ids.map(|id| id.unwrap()).collect()
}

/// Purges what left recall over 6 hours ago and checks it was exactly that.
fn purge(
    db: &Db,
    path: &std::path::Path,
    stored: &mut HashMap<i64, Kind>,
    removed: &mut HashSet<i64>,
    now: i64,
) -> u64 {
    let cutoff = now - (PURGE_AGE_S * 1000.0) as i64;
    let due: HashSet<i64> = stored
        .iter()
        .filter(|(_, k)| match **k {
            Kind::Expiring { expires } => expires <= cutoff,
            Kind::Forgotten { at } => at <= cutoff,
            _ => false,
        })
        .map(|(id, _)| *id)
        .collect();
    let out = db.purge(PURGE_AGE_S).unwrap();
    let left = ids(path);
    let gone: HashSet<i64> = stored.keys().copied().filter(|id| !left.contains(id)).collect();
    assert_eq!(gone, due, "purge at {now}: {out:?}");
    assert_eq!(out.purged, due.len() as u64);
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
    let clock = Arc::new(AtomicI64::new(START_MS));
    let mut db = open(&d.db(), &clock);
    let mut stored: HashMap<i64, Kind> = HashMap::new();
    let mut removed: HashSet<i64> = HashSet::new();
    let mut constraints = 0;
    let (mut evictions, mut slowest, mut purged) = (HashMap::new(), std::time::Duration::ZERO, 0);
    let started = std::time::Instant::now();
    for day in 0..DAYS {
        for i in 0..PER_DAY {
            let n = day * PER_DAY + i;
            let now = START_MS + n as i64 * STEP_MS;
            clock.store(now, Ordering::SeqCst);
            // 1 minute to 6 hours, spread over the learns.
            let ttl_s = 60 + (n as i64 * 7919) % (6 * 3600 - 60);
            let kind = match i % 100 {
                0..=2 => Kind::Constraint,
                3..=12 => Kind::Expiring { expires: now + ttl_s * 1000 },
                13..=22 => Kind::Forgotten { at: now },
                _ => Kind::Plain,
            };
            let text = match kind {
                Kind::Constraint => format!("the arm must never exceed {n} newtons near fixture {}", n % 97),
                _ => format!("conveyor {n} stopped for {} seconds near pallet aisle {}", n % 600, n % 31),
            };
            let ttl_seconds = matches!(kind, Kind::Expiring { .. }).then_some(ttl_s as f64);
            // The lowest tier stored now (protected memories are never evicted).
            let want = stored.values().map(|k| tier_of(*k, now)).min().unwrap_or(Tier::Active).min(Tier::Active);
            let t = std::time::Instant::now();
            let out = db.learn(&LearnRequest { insight: &text, ttl_seconds, ..Default::default() }).unwrap();
            slowest = slowest.max(t.elapsed());
            assert!(out.duplicate.is_none(), "{text}");
            for id in &out.evicted {
                let k = stored.remove(id).unwrap_or_else(|| panic!("evicted #{id} was not stored"));
                let got = tier_of(k, now);
                assert_ne!(got, Tier::Protected, "day {day}: a constraint was evicted");
                assert_eq!(got, want, "day {day}: evicted #{id} ({k:?}) from {got:?} while {want:?} was stored");
                removed.insert(*id);
                *evictions.entry(format!("{got:?}")).or_insert(0) += 1;
            }
            if kind == Kind::Constraint {
                assert_eq!(out.category, "constraint", "{text}");
                constraints += 1;
            }
            stored.insert(out.memory_id, kind);
            if matches!(kind, Kind::Forgotten { .. }) {
                db.forget(out.memory_id, "wrong reading").unwrap();
            }
            if i % 10 == 9 {
                let q = format!("pallet aisle {}", n % 31);
                let r = db.recall(&RecallRequest { query: &q, n: 5, min_confidence: 0.0, ..Default::default() });
                for h in r.unwrap().hits {
                    let t = tier_of(stored[&h.memory.id], now);
                    assert!(t == Tier::Active || t == Tier::Protected, "recall {q:?} at {now}: #{} {t:?}", h.memory.id);
                }
            }
            if i % 500 == 499 {
                db.flush().unwrap();
                purged += purge(&db, &d.db(), &mut stored, &mut removed, now);
            }
        }
        let now = clock.load(Ordering::SeqCst);
        check_day(&db, &stored, &removed, day, now);
        if day % 3 == 2 {
            drop(db);
            db = open(&d.db(), &clock);
            check_day(&db, &stored, &removed, day, now);
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
        "soak: {} learns over {DAYS} days of the clock, evicted {evictions:?}, purged {purged}, {} removed in all \
         ({records} records kept), {kept} constraints kept, slowest learn {:?}, {:.1} s, file {file} bytes",
        DAYS * PER_DAY,
        removed.len(),
        slowest,
        started.elapsed().as_secs_f64()
    );
}
