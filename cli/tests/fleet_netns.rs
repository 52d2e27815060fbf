//! The fleet over real links, part 1 (scripts/fleet-test.sh; needs root for network
//! namespaces, else SKIPPED): robots in namespaces of their own, joined to the hub's by
//! veth pairs. A 300 ms round trip with jitter and a link reset every few seconds (the
//! fault proxy of common/proxy.rs), a 256 kbit/s link (tbf). Under each: nothing lost
//! or twice on the hub or the robots, convergence after the fault (timed), and learns
//! on the robots succeed while it lasts (latencies printed, not asserted).

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

use netns_case::{row, setup, Rig};
use proxy::Mode;

#[test]
fn a_300ms_round_trip_with_jitter() {
    let Some((server, lab)) = setup("a_300ms_round_trip_with_jitter") else { return };
    let mut rig = Rig::new(&server, lab, "fleet_ns_rtt", 2, 40, true);
    rig.start_all();
    let first = rig.converge(60);
    // 150 ± 60 ms each way: a round trip of 180–420 ms.
    for p in rig.proxies.iter().flatten() {
        p.set(Mode::Delay { base_ms: 150, jitter_ms: 60 });
    }
    let mut lat = rig.during(Duration::from_millis(50), |_| std::thread::sleep(Duration::from_secs(15)));
    // Convergence with the delay still on: every round trip costs ~300 ms.
    let t = rig.converge(90);
    rig.check_counts();
    for p in rig.proxies.iter().flatten() {
        p.set(Mode::Pass);
    }
    let logs = rig.stop();
    for l in &logs {
        assert!(!l.contains("warning"), "a slow link is not a failure: {l}");
    }
    println!("first convergence (40 facts per robot, no fault): {:.1} s", first.as_secs_f64());
    row("300 ms RTT ± 120 ms jitter, 15 s (proxy)", "delay", t, &mut lat, "none (no failure, no reconnect)");
}

#[test]
fn a_256_kbit_link() {
    let Some((server, lab)) = setup("a_256_kbit_link") else { return };
    // A backlog first: 300 facts per robot learned offline, then pushed and pulled over the slow link.
    let mut rig = Rig::new(&server, lab, "fleet_ns_slow", 2, 300, false);
    for n in rig.nodes.clone() {
        rig.lab.rate(&n, "256kbit");
    }
    rig.start_all();
    let mut lat = rig.during(Duration::from_millis(20), |_| std::thread::sleep(Duration::from_secs(15)));
    let t = rig.converge(120);
    rig.check_counts();
    let moved: Vec<String> = rig
        .nodes
        .iter()
        .map(|n| {
            let o = std::process::Command::new("tc").args(["-s", "qdisc", "show", "dev", &n.hub_if]).output().unwrap();
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.split_whitespace().skip_while(|w| *w != "Sent").nth(1).unwrap_or("?").to_string()
        })
        .collect();
    for n in rig.nodes.clone() {
        rig.lab.unrate(&n);
    }
    let logs = rig.stop();
    for l in &logs {
        assert!(!l.contains("warning"), "a slow link is not a failure: {l}");
    }
    println!("bytes sent by the hub to each robot through tbf: {moved:?}");
    row("256 kbit/s both ways, 15 s of learning (tbf)", "rate", t, &mut lat, "none");
}

#[test]
fn a_link_reset_every_few_seconds() {
    let Some((server, lab)) = setup("a_link_reset_every_few_seconds") else { return };
    let mut rig = Rig::new(&server, lab, "fleet_ns_flap", 2, 40, true);
    rig.start_all();
    rig.converge(60);
    let since = Instant::now();
    // Down 2 s (every connection reset, new ones too), up 3 s; 5 times.
    let mut lat = rig.during(Duration::from_millis(50), |rig| {
        for _ in 0..5 {
            for p in rig.proxies.iter().flatten() {
                p.set(Mode::Down);
            }
            std::thread::sleep(Duration::from_secs(2));
            for p in rig.proxies.iter().flatten() {
                p.set(Mode::Pass);
            }
            std::thread::sleep(Duration::from_secs(3));
        }
    });
    let t = rig.converge(90);
    rig.check_counts();
    let resets: Vec<u64> = rig.proxies.iter().flatten().map(|p| p.resets()).collect();
    let failures: Vec<usize> = (0..2).map(|i| rig.sync(i).warnings_after(since).len()).collect();
    for (i, f) in failures.iter().enumerate() {
        assert!(*f > 0, "robot {i}: a reset link must fail some cycles: {}", rig.sync(i).log());
    }
    rig.stop();
    row(
        "link reset every 5 s (down 2 s, up 3 s) × 5 (proxy)",
        "resets",
        t,
        &mut lat,
        &format!("{resets:?} connections reset, {failures:?} failed cycles, each retried (backoff 1 s doubling)"),
    );
}
