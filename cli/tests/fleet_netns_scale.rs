//! Scale over real links: 20 robots, each in a namespace of its own with its sidecar
//! (`--every 500ms`, connection held), against one hub. Every robot learns a fact a
//! second for 30 s; the delay until each other robot holds it (propagation p50/p95),
//! the hub's CPU (all `postgres` processes) and its robot connections, the sidecars'
//! CPU; then nothing lost or twice. Long: run by `scripts/fleet-test.sh --bench`
//! (ROBOTMEM_FLEET_SCALE=1); without it the test says so and passes.

#[path = "common/hub.rs"]
mod hub;
#[path = "common/netns.rs"]
mod netns;
#[path = "common/netns_case.rs"]
mod netns_case;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/fleet_view.rs"]
mod view;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hub::Server;
use netns::{pct, report, Lab};
use netns_case::Rig;
use robotmem::LearnRequest;

const ROBOTS: usize = 20;

/// CPU seconds (user + system) of every process named `comm`.
fn cpu_of(comm: &str) -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut total = 0.0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let Some((head, rest)) = stat.rsplit_once(") ") else { continue };
        if !head.ends_with(&format!("({comm}")) {
            continue;
        }
        let f: Vec<&str> = rest.split(' ').collect();
        total += (f[11].parse::<f64>().unwrap_or(0.0) + f[12].parse::<f64>().unwrap_or(0.0)) / ticks;
    }
    total
}

/// "r3 step 17: …" → ("r3", 17).
fn parse(text: &str) -> Option<(String, usize)> {
    let (robot, rest) = text.split_once(" step ")?;
    Some((robot.to_string(), rest.split(':').next()?.parse().ok()?))
}

#[test]
fn twenty_robots_against_one_hub() {
    if std::env::var("ROBOTMEM_FLEET_SCALE").as_deref() != Ok("1") {
        eprintln!("twenty_robots_against_one_hub: a bench (set ROBOTMEM_FLEET_SCALE=1; scripts/fleet-test.sh --bench runs it)");
        return;
    }
    let Some(lab) = Lab::get("twenty_robots_against_one_hub") else { return };
    let Some(server) = Server::get("twenty_robots_against_one_hub") else { return };
    let mut rig = Rig::new(&server, lab, "fleet_ns_scale", ROBOTS, 10, false);
    let t = Instant::now();
    rig.start_all();
    rig.converge(300);
    println!(
        "{ROBOTS} robots × 10 facts: every robot holds all {} after {:.1} s",
        ROBOTS * 10,
        t.elapsed().as_secs_f64()
    );

    let learned_at: Mutex<HashMap<(String, usize), Instant>> = Mutex::new(HashMap::new());
    let seen_at: Mutex<HashMap<(usize, String, usize), Instant>> = Mutex::new(HashMap::new());
    let stop = AtomicBool::new(false);
    let mut admin = rig.hub.admin();
    let (cpu_hub0, cpu_sync0, t0) = (cpu_of("postgres"), cpu_of("robotmem"), Instant::now());
    let mut max_conns = 0i64;
    let secs = 30;
    std::thread::scope(|s| {
        for i in 0..ROBOTS {
            let (db, id, start) = (&rig.dbs[i], rig.robots[i].id.clone(), rig.learned[i]);
            let (learned_at, stop) = (&learned_at, &stop);
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(50 * i as u64));
                let mut k = start;
                while !stop.load(Ordering::Relaxed) {
                    db.learn(&LearnRequest { insight: &view::fact(&id, k), ..Default::default() }).unwrap();
                    learned_at.lock().unwrap().insert((id.clone(), k), Instant::now());
                    k += 1;
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
        let (files, seen_at, learned_at, stop) = (&rig.files, &seen_at, &learned_at, &stop);
        s.spawn(move || {
            let conns: Vec<rusqlite::Connection> =
                files.iter().map(|f| rusqlite::Connection::open(f).unwrap()).collect();
            let deadline = Instant::now() + Duration::from_secs(secs + 60);
            // Until the learners stopped and every fact is on every other robot (or the deadline).
            while Instant::now() < deadline {
                let done = stop.load(Ordering::Relaxed);
                for (r, c) in conns.iter().enumerate() {
                    let mut st = c.prepare_cached("SELECT content FROM memories WHERE status = 'active'").unwrap();
                    let now = Instant::now();
                    let texts: Vec<String> = st.query_map([], |row| row.get(0)).unwrap().map(|x| x.unwrap()).collect();
                    let mut seen = seen_at.lock().unwrap();
                    for t in texts {
                        if let Some((o, k)) = parse(&t) {
                            seen.entry((r, o, k)).or_insert(now);
                        }
                    }
                }
                if done {
                    let (seen, learned) = (seen_at.lock().unwrap(), learned_at.lock().unwrap());
                    if seen.keys().filter(|(_, o, k)| learned.contains_key(&(o.clone(), *k))).count()
                        >= learned.len() * ROBOTS
                    {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            let n: i64 = admin
                .query_one("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'robotmem-sync'", &[])
                .unwrap()
                .get(0);
            max_conns = max_conns.max(n);
            std::thread::sleep(Duration::from_millis(500));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let wall = t0.elapsed().as_secs_f64();
    let (cpu_hub, cpu_sync) = ((cpu_of("postgres") - cpu_hub0) / wall, (cpu_of("robotmem") - cpu_sync0) / wall);
    for (i, n) in rig.learned.iter_mut().enumerate() {
        *n += learned_at.lock().unwrap().keys().filter(|(o, _)| *o == format!("r{}", i + 1)).count();
    }
    let c = rig.converge(120);
    rig.check_counts();

    let learned_at = learned_at.into_inner().unwrap();
    let seen_at = seen_at.into_inner().unwrap();
    let mut lat = Vec::new();
    let mut missing = 0;
    for ((o, k), at) in &learned_at {
        for r in 0..ROBOTS {
            if format!("r{}", r + 1) == *o {
                continue;
            }
            match seen_at.get(&(r, o.clone(), *k)) {
                Some(s) => lat.push(s.saturating_duration_since(*at).as_secs_f64() * 1e3),
                None => missing += 1,
            }
        }
    }
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    rig.stop();
    report(&format!(
        "| scale: {ROBOTS} robots, --every 500ms, 1 fact/s each for {secs} s | propagation to each other robot p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({} pairs{}) | hub CPU {:.2} cores (all postgres processes), {max_conns} robot connections | sidecars {:.2} cores together | converged {:.1} s after the last learn |",
        pct(&lat, 0.5),
        pct(&lat, 0.95),
        lat.last().copied().unwrap_or(f64::NAN),
        lat.len(),
        if missing > 0 { format!(", {missing} seen only after the watch") } else { String::new() },
        cpu_hub,
        cpu_sync,
        c.as_secs_f64()
    ));
}
