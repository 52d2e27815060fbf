//! A handle's own clock (`OpenOptions::clock`): a simulated clock that the test
//! moves decides every time robotmem stores and compares — creation, update,
//! forget and access times, expiry (recall, listing, get, dedup), decay, purge
//! ages, history and "as of" — and readings that are not times never break it.

#[path = "common/scratch.rs"]
mod scratch;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use robotmem::*;

/// 2031-05-04T03:02:01.000Z: far from the system clock either way.
const START: i64 = 1_935_630_121_000;
const MINUTE: i64 = 60_000;
const DAY: i64 = 86_400_000;

/// A clock the test moves.
#[derive(Clone)]
struct Sim(Arc<AtomicI64>);

impl Sim {
    fn new(at: i64) -> Sim {
        Sim(Arc::new(AtomicI64::new(at)))
    }
    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    fn clock(&self) -> Clock {
        let t = self.0.clone();
        Clock::new(move || t.load(Ordering::SeqCst))
    }
}

fn stamp(ms: i64) -> String {
    clock::stamp(clock::at_ms(ms).unwrap())
}

fn open(p: &std::path::Path, sim: &Sim) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    o.clock = sim.clock();
    Db::open(o).unwrap()
}

fn learn(db: &Db, text: &str, ttl: Option<f64>) -> LearnOutcome {
    db.learn(&LearnRequest { insight: text, ttl_seconds: ttl, ..Default::default() }).unwrap()
}

fn recall_ids(db: &Db, q: &str) -> Vec<i64> {
    let r = db.recall_unrecorded(&RecallRequest { query: q, n: 20, min_confidence: 0.0, ..Default::default() });
    r.unwrap().hits.iter().map(|h| h.memory.id).collect()
}

#[test]
fn expiry_follows_the_handle_clock_not_the_system_one() {
    let d = scratch::Scratch::new("clock-expiry");
    let sim = Sim::new(START);
    let db = open(&d.db(), &sim);
    let id = learn(&db, "the loading bay door is stuck half open", Some(600.0)).memory_id;
    let m = db.get(id).unwrap();
    assert_eq!(m.created_at, stamp(START));
    assert_eq!(m.expires_at.as_deref(), Some(stamp(START + 10 * MINUTE).as_str()));
    assert_eq!(db.now(), stamp(START));

    sim.advance(10 * MINUTE - 1);
    assert_eq!(recall_ids(&db, "loading bay door"), vec![id], "1 ms before it expires");
    assert!(!db.get(id).unwrap().expired);
    sim.advance(1);
    assert!(recall_ids(&db, "loading bay door").is_empty(), "expired at its time on the handle's clock");
    let m = db.get(id).unwrap();
    assert!(m.expired && m.status == MemoryStatus::Active, "readable by id, reported as expired: {m:?}");
    let active = db.list(&ListRequest { status: Some(MemoryStatus::Active), ..Default::default() }).unwrap();
    assert_eq!(active.total, 0);
    assert_eq!(db.stats().unwrap().expired, 1);
    // Dedup no longer sees it: the same fact learned again is a new memory.
    let again = learn(&db, "the loading bay door is stuck half open", None);
    assert_ne!(again.memory_id, id, "{again:?}");

    // Back in time (a simulation restarted): it is not expired then.
    sim.set(START + MINUTE);
    assert!(!db.get(id).unwrap().expired);
    // An explicit expiry is compared with the clock too: a time past on the
    // system clock but ahead on this one is not expired.
    let future_here = db.set_expiry(id, None, Some(&stamp(START + 2 * MINUTE))).unwrap();
    assert!(!future_here.expired);
    sim.advance(MINUTE);
    assert!(db.get(id).unwrap().expired);
}

#[test]
fn change_times_history_purge_and_as_of_read_the_clock() {
    let d = scratch::Scratch::new("clock-history");
    let sim = Sim::new(START);
    let db = open(&d.db(), &sim);
    let id = learn(&db, "the forklift charger in aisle 3 trips at 40 A", None).memory_id;
    learn(&db, "the dock lights switch off at 22:00", None); // a purge never empties the file
    sim.advance(DAY);
    db.update(id, "the forklift charger in aisle 3 trips at 35 A", None).unwrap();
    assert_eq!(db.get(id).unwrap().updated_at, stamp(START + DAY));
    sim.advance(DAY);
    db.forget(id, "the charger was replaced").unwrap();
    let h = db.history(id).unwrap();
    let times: Vec<_> = h.iter().map(|v| (v.valid_from.clone(), v.valid_to.clone())).collect();
    assert_eq!(
        times,
        [
            (stamp(START), Some(stamp(START + DAY))),
            (stamp(START + DAY), Some(stamp(START + 2 * DAY))),
            (stamp(START + 2 * DAY), None)
        ],
        "{h:?}"
    );

    // As of a time on the clock: each version; the clock's future is refused
    // although it is the system clock's future too (2031).
    let v = db.as_of(&stamp(START + DAY / 2)).unwrap();
    assert!(v.get(id).unwrap().content.contains("40 A"));
    let v = db.as_of(&stamp(START + 3 * DAY / 2)).unwrap();
    assert!(v.get(id).unwrap().content.contains("35 A"));
    let e = db.as_of(&stamp(START + 2 * DAY + 1)).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument, "{e:?}");

    // Purge ages on the clock: forgotten 1 h ago is not older than 2 h; 3 h later it is.
    sim.advance(60 * MINUTE);
    assert_eq!(db.purge(7200.0).unwrap().purged, 0);
    sim.advance(2 * 60 * MINUTE);
    assert_eq!(db.purge(7200.0).unwrap().purged, 1);
    assert_eq!(db.get(id).unwrap_err().status, Status::NotFound);
}

#[test]
fn recall_access_and_decay_count_days_on_the_clock() {
    let d = scratch::Scratch::new("clock-decay");
    let sim = Sim::new(START);
    let db = open(&d.db(), &sim);
    let s = db.start_session(None, None).unwrap().session_id;
    let id = db
        .learn(&LearnRequest {
            insight: "the vision model misreads labels under the sodium lamps",
            session_id: Some(&s),
            ..Default::default()
        })
        .unwrap()
        .memory_id;
    let before = db.get(id).unwrap().confidence;
    sim.advance(DAY / 2);
    let r = db.recall(&RecallRequest { query: "sodium lamps labels", min_confidence: 0.0, ..Default::default() });
    assert_eq!(r.unwrap().hits.len(), 1);
    db.flush().unwrap();
    assert_eq!(db.get(id).unwrap().last_accessed, Some(stamp(START + DAY / 2)));
    // Ten days after that access, on the clock: a session's end decays it ten days' worth.
    sim.advance(10 * DAY);
    let ended = db.end_session(&s, Some(0.5)).unwrap();
    assert_eq!(ended.decayed_count, 1, "{ended:?}");
    let after = db.get(id).unwrap().confidence;
    let expected = before * (1.0 - 0.01f64).powi(10);
    assert!((after - expected).abs() < 1e-9, "{before} -> {after}, expected {expected}");
}

#[test]
fn readings_that_are_not_times_fall_back_to_the_system_clock() {
    let d = scratch::Scratch::new("clock-bad");
    for bad in [-1, i64::MIN, i64::MAX, 253_402_300_800_000] {
        let sim = Sim::new(bad);
        let db = open(&d.join(format!("{bad}.db")), &sim);
        let before = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let id = learn(&db, "the lidar on robot 7 is dirty", Some(60.0)).memory_id;
        let m = db.get(id).unwrap();
        let after = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        assert!(before <= m.created_at && m.created_at <= after, "{bad}: {}", m.created_at);
        assert!(!m.expired);
        assert_eq!(recall_ids(&db, "lidar dirty"), vec![id]);
        // The bounds themselves are times.
        sim.set(253_402_300_799_999);
        assert!(db.get(id).unwrap().expired, "{bad}: at the end of 9999 it has expired");
        sim.set(0);
        assert_eq!(learn(&db, "the epoch robot learned this", None).memory_id, id + 1);
        assert_eq!(db.get(id + 1).unwrap().created_at, "1970-01-01T00:00:00.000Z");
    }
}

#[test]
fn a_clock_read_from_many_threads_at_once() {
    let d = scratch::Scratch::new("clock-threads");
    let sim = Sim::new(START);
    let db = Arc::new(open(&d.db(), &sim));
    std::thread::scope(|s| {
        for t in 0..4 {
            let (db, sim) = (db.clone(), sim.clone());
            s.spawn(move || {
                for i in 0..50 {
                    sim.advance(1000);
                    learn(&db, &format!("robot {t} saw pallet {i} in aisle {}", i % 7), Some(30.0));
                    recall_ids(&db, "pallet aisle");
                }
            });
        }
    });
    // 200 learns, each expiring 30 s after it on a clock that moved 200 s: the
    // last 30 are live, give or take the interleaving of the threads.
    let live = db.list(&ListRequest { status: Some(MemoryStatus::Active), ..Default::default() });
    let live = live.unwrap().total;
    assert!((20..=40).contains(&live), "{live}");
}
