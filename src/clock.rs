//! Where a handle reads the time: the system clock, or one its user gives
//! (a simulation's clock, ROS 2 `/clock`, a test that lets days pass).
//!
//! Every time the engine stores or compares goes through the handle's clock:
//! creation, update, access and forget times, expiry (in Rust and, through the
//! SQL function `robotmem_now()` registered on each connection, in SQL), decay,
//! eviction's recency, purge ages, the times of history versions and the
//! bounds of "as of". Times are stored as text (UTC, milliseconds), which sorts
//! as time does.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

/// Latest time a clock may give: 9999-12-31T23:59:59.999Z, in ms since 1970
/// (the stored-time text keeps four digits of year, so its order holds).
pub(crate) const MAX_MS: i64 = 253_402_300_799_999;

/// A source of the current time. [`Clock::system`] (the default) reads the
/// system clock; [`Clock::new`] reads a function giving milliseconds since
/// 1970-01-01T00:00:00Z. A reading outside 1970 to 9999-12-31 is not a time: the
/// system clock's is used for that reading instead.
#[derive(Clone, Default)]
pub struct Clock {
    read: Option<Arc<dyn Fn() -> i64 + Send + Sync>>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock { read: None }
    }

    /// A clock reading `ms` (milliseconds since 1970, UTC). Called on every
    /// thread that uses the handle, concurrently: it must be thread-safe. It
    /// may go backwards (a simulation restarted); nothing relies on order.
    pub fn new(ms: impl Fn() -> i64 + Send + Sync + 'static) -> Clock {
        Clock { read: Some(Arc::new(ms)) }
    }

    /// A clock that always reads `at`.
    pub fn fixed(at: DateTime<Utc>) -> Clock {
        let ms = at.timestamp_millis();
        Clock::new(move || ms)
    }

    /// Whether this is the system clock.
    pub fn is_system(&self) -> bool {
        self.read.is_none()
    }

    /// The current time.
    pub fn now(&self) -> DateTime<Utc> {
        self.read.as_ref().and_then(|read| at_ms(read())).unwrap_or_else(Utc::now)
    }

    /// The current time as stored (`2026-03-09T10:30:00.123Z`).
    pub fn stamp(&self) -> String {
        stamp(self.now())
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_system() { "Clock::system" } else { "Clock::new(..)" })
    }
}

/// The time `ms` milliseconds after 1970-01-01T00:00:00Z, if in 0..=[`MAX_MS`].
pub fn at_ms(ms: i64) -> Option<DateTime<Utc>> {
    (0..=MAX_MS).contains(&ms).then(|| Utc.timestamp_millis_opt(ms).single()).flatten()
}

/// `t` as stored: RFC 3339, UTC, milliseconds.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Registers `robotmem_now()` on `conn`: the stored time of `clock`, read once
/// per statement run (a deterministic function of no argument is evaluated
/// once, before the statement's loop, like SQLite's own `'now'`).
pub(crate) fn register(conn: &rusqlite::Connection, clock: &Clock) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    let clock = clock.clone();
    conn.create_scalar_function(
        "robotmem_now",
        0,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_DIRECTONLY,
        move |_| Ok(clock.stamp()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_bounds_are_times_and_beyond_them_the_system_clock_reads() {
        assert_eq!(stamp(at_ms(0).unwrap()), "1970-01-01T00:00:00.000Z");
        assert_eq!(stamp(at_ms(MAX_MS).unwrap()), "9999-12-31T23:59:59.999Z");
        for bad in [-1, MAX_MS + 1, i64::MIN, i64::MAX] {
            assert!(at_ms(bad).is_none());
            let before = Utc::now();
            let read = Clock::new(move || bad).now();
            assert!(read >= before && read <= Utc::now(), "{bad}: {read}");
        }
    }

    proptest! {
        // Any reading: a stored time of 24 characters that parses back to itself
        // (in range), or the system's time (out of range); never a panic.
        #[test]
        fn every_reading_gives_a_stored_time(ms in any::<i64>()) {
            let s = Clock::new(move || ms).stamp();
            prop_assert_eq!(s.len(), 24);
            let back = DateTime::parse_from_rfc3339(&s).unwrap().timestamp_millis();
            if (0..=MAX_MS).contains(&ms) {
                prop_assert_eq!(back, ms);
            }
        }

        // Stored times sort as the times do.
        #[test]
        fn stored_times_sort_as_times(a in 0..=MAX_MS, b in 0..=MAX_MS) {
            let (sa, sb) = (stamp(at_ms(a).unwrap()), stamp(at_ms(b).unwrap()));
            prop_assert_eq!(a.cmp(&b), sa.cmp(&sb));
        }
    }
}
