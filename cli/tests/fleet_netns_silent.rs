//! The fleet over real links, part 2: links that go silent (scripts/fleet-test.sh;
//! needs root for network namespaces, else SKIPPED).
//!
//! - A 70 s black hole: a blackhole route on the hub for each robot's address, so every
//!   packet to the robot vanishes and nothing is reset. The sidecars' waiting calls must
//!   fail within about a minute, as docs/FLEET.md says (TCP keepalives 30 s + 3 × 10 s and
//!   a 60 s user timeout): robot 1 with a request the hub never acknowledges (user
//!   timeout), robot 2 with a push the hub acknowledged and holds (the test locks its
//!   row), so only keepalives can tell. 70 s, not 60: the hole must outlast the timeout.
//! - A partition that heals: the hub's end of each link down for 20 s, then up.
//!
//! Under each: nothing lost or twice, convergence after the fault (timed), and learns on
//! the robots succeed throughout (latencies printed, not asserted).

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

use std::time::{Duration, Instant};

use hub::wait_for;

use netns_case::{row, setup, Rig};

#[test]
fn a_70s_black_hole_fails_the_waiting_calls_within_a_minute() {
    let Some((server, lab)) = setup("a_70s_black_hole_fails_the_waiting_calls_within_a_minute") else { return };
    let mut rig = Rig::new(&server, lab, "fleet_ns_hole", 2, 20, false);
    rig.start_all();
    rig.converge(60);

    // Robot 2's next push waits on its row, which the test holds: the hub acknowledged it.
    let mut holder = rig.hub.admin();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT 1 FROM fleet.robots WHERE robot_id = 'r2' FOR UPDATE", &[]).unwrap();
    view::open(&rig.files[1])
        .learn(&robotmem::LearnRequest { insight: &view::fact("r2", rig.learned[1]), ..Default::default() })
        .unwrap();
    rig.learned[1] += 1;
    let mut watch = rig.hub.admin();
    wait_for(20, "robot 2's push to wait on its row", || {
        let n: i64 = watch
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'robotmem-sync' AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0);
        n == 1
    });

    let hole = Instant::now();
    for n in &rig.nodes {
        rig.lab.blackhole(n, true);
    }
    let mut lat = rig.during(Duration::from_millis(100), |_| std::thread::sleep(Duration::from_secs(70)));
    for n in &rig.nodes {
        rig.lab.blackhole(n, false);
    }
    tx.rollback().unwrap();
    let healed = Instant::now();
    let t = rig.converge(150);
    rig.check_counts();

    let mut observed = Vec::new();
    for (i, why) in [(0, "user timeout"), (1, "keepalive")] {
        let s = rig.sync(i);
        let first = s.warnings_after(hole).into_iter().next();
        let (after, line) =
            first.unwrap_or_else(|| panic!("robot {}: no failure during the 70 s black hole: {}", i + 1, s.log()));
        println!("robot {}: first failure {:.1} s into the hole: {line}", i + 1, after.as_secs_f64());
        assert!(
            (Duration::from_secs(45)..Duration::from_secs(70)).contains(&after),
            "robot {}: the silent link must fail its waiting call within about a minute ({why}), not after {after:?}: {line}",
            i + 1
        );
        let during = s.warnings_after(hole).iter().filter(|(d, _)| *d < healed - hole).count();
        for (d, l) in s.warnings_after(healed) {
            println!("robot {} after the hole, +{:.1} s: {l}", i + 1, d.as_secs_f64());
        }
        observed.push(format!(
            "r{} ({why}): first failure at {:.0} s, {during} failed attempts in the hole",
            i + 1,
            after.as_secs_f64()
        ));
    }
    let logs = rig.stop();
    for l in &logs {
        assert!(l.contains("connected to the hub"), "{l}");
    }
    row("black hole 70 s (blackhole route on the hub)", "silent", t, &mut lat, &observed.join("; "));
    println!("convergence counted from the end of the hole ({:.1} s after it began)", (healed - hole).as_secs_f64());
}

#[test]
fn a_partition_that_heals() {
    let Some((server, lab)) = setup("a_partition_that_heals") else { return };
    let mut rig = Rig::new(&server, lab, "fleet_ns_part", 2, 20, false);
    rig.start_all();
    rig.converge(60);
    let since = Instant::now();
    let mut lat = rig.during(Duration::from_millis(50), |rig| {
        for n in &rig.nodes {
            rig.lab.link(n, false);
        }
        std::thread::sleep(Duration::from_secs(20));
        for n in &rig.nodes {
            rig.lab.link(n, true);
        }
    });
    let t = rig.converge(120);
    rig.check_counts();
    let failures: Vec<usize> = (0..2).map(|i| rig.sync(i).warnings_after(since).len()).collect();
    rig.stop();
    row(
        "partition 20 s, then healed (hub's veth end down/up)",
        "down",
        t,
        &mut lat,
        &format!("{failures:?} failed cycles (20 s is under the 60 s timeout: TCP retransmits across it)"),
    );
}
