//! Latency summaries and process memory readings.

use serde_json::{json, Value};

/// Latency summary of a set of samples, in milliseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// Nearest-rank percentiles of `samples_ns` (nanoseconds).
    pub fn of(samples_ns: &[u64]) -> Summary {
        if samples_ns.is_empty() {
            return Summary::default();
        }
        let mut s = samples_ns.to_vec();
        s.sort_unstable();
        let ms = |ns: u64| ns as f64 / 1e6;
        let pct = |p: f64| {
            let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
            ms(s[rank.clamp(1, s.len()) - 1])
        };
        Summary {
            n: s.len(),
            mean: s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64 / 1e6,
            p50: pct(50.0),
            p95: pct(95.0),
            p99: pct(99.0),
            max: ms(*s.last().unwrap()),
        }
    }

    pub fn json(&self) -> Value {
        let r = |x: f64| (x * 1e4).round() / 1e4;
        json!({"n": self.n, "mean_ms": r(self.mean), "p50_ms": r(self.p50), "p95_ms": r(self.p95),
               "p99_ms": r(self.p99), "max_ms": r(self.max)})
    }

    pub fn row(&self, label: &str) -> String {
        format!(
            "  {label:<22} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            self.n, self.p50, self.p95, self.p99, self.mean, self.max
        )
    }
}

pub fn header() -> String {
    format!("  {:<22} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}", "", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms", "max ms")
}

/// A field of /proc/self/status in kB (VmRSS, VmHWM …); 0 when unavailable.
pub fn proc_status_kb(field: &str) -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}
