//! The vectors of recent query texts, so that a query asked again (a robot's
//! control loop asks the same few questions) does not run the model again.
//!
//! In a recall the model run is the largest cost: 1.6–2.2 ms at the median on the
//! benchmark machine, against 0.65 ms when the same text is embedded back to back
//! (the model's weights and the core's caches are cold after the rest of the
//! recall or an idle moment: docs/BENCHMARKS.md, "Where a hybrid recall's time
//! goes"). The model is deterministic, so a text's vector never changes while
//! the handle has its model: entries are kept until the capacity
//! (`OpenOptions::query_cache`, default 256) is reached, then the least recently
//! used goes. Texts longer than [`MAX_TEXT_BYTES`] are not kept. About 2 KiB a
//! 512-d entry: ~0.6 MiB per handle at the default.

use std::collections::HashMap;

use parking_lot::Mutex;

/// Longest text kept, in bytes.
pub const MAX_TEXT_BYTES: usize = 512;

/// A query's embedding: `None` when the model cannot represent the text.
pub type Vector = Option<Vec<f32>>;

#[derive(Default)]
struct Inner {
    entries: HashMap<Box<str>, (Vector, u64)>,
    tick: u64,
}

/// Recent query texts and their vectors; thread-safe.
pub struct QueryCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

impl QueryCache {
    /// A cache of at most `capacity` texts (0: keeps none).
    pub fn new(capacity: usize) -> QueryCache {
        QueryCache { inner: Mutex::default(), capacity }
    }

    /// The vector kept for `text`, if any (and it becomes the most recently used).
    pub fn get(&self, text: &str) -> Option<Vector> {
        let mut inner = self.inner.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let (v, used) = inner.entries.get_mut(text)?;
        *used = tick;
        Some(v.clone())
    }

    /// Keeps `v` as the vector of `text` (the least recently used text goes when
    /// the cache is full).
    pub fn put(&self, text: &str, v: &Vector) {
        if text.len() > MAX_TEXT_BYTES || self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.lock();
        inner.tick += 1;
        let tick = inner.tick;
        if inner.entries.len() >= self.capacity && !inner.entries.contains_key(text) {
            let oldest = inner.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                inner.entries.remove(&k);
            }
        }
        inner.entries.insert(text.into(), (v.clone(), tick));
    }

    /// Texts kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAPACITY: usize = 256;

    #[test]
    fn keeps_vectors_and_unrepresentable_texts() {
        let c = QueryCache::new(CAPACITY);
        assert_eq!(c.get("grasp the cup"), None);
        c.put("grasp the cup", &Some(vec![0.6, 0.8]));
        c.put("😀", &None);
        assert_eq!(c.get("grasp the cup"), Some(Some(vec![0.6, 0.8])));
        assert_eq!(c.get("😀"), Some(None), "known to be unrepresentable");
        assert_eq!(c.get("grasp the cup "), None, "exact text only");
        c.put(&"x".repeat(MAX_TEXT_BYTES + 1), &Some(vec![1.0]));
        assert_eq!(c.len(), 2, "a long text is not kept");
        let off = QueryCache::new(0);
        off.put("grasp the cup", &Some(vec![1.0]));
        assert_eq!(off.get("grasp the cup"), None, "capacity 0 keeps nothing");
    }

    #[test]
    fn the_least_recently_used_text_goes_first() {
        let c = QueryCache::new(CAPACITY);
        for i in 0..CAPACITY {
            c.put(&format!("q{i}"), &Some(vec![i as f32]));
        }
        assert_eq!(c.get("q0"), Some(Some(vec![0.0]))); // q0 is now the most recent
        c.put("new", &None);
        assert_eq!(c.len(), CAPACITY);
        assert_eq!(c.get("q1"), None, "the least recently used went");
        assert!(c.get("q0").is_some() && c.get("new").is_some());
    }

    proptest! {
        /// Whatever texts come (any length, any script) and in any order, the
        /// cache never holds more than its capacity, and a text it returns has
        /// the vector last put for it.
        #[test]
        fn bounded_and_never_wrong(ops in proptest::collection::vec((0u16..400, any::<bool>(), ".{0,8}"), 1..1200)) {
            let c = QueryCache::new(CAPACITY);
            let mut last: HashMap<String, Vector> = HashMap::new();
            for (key, put, tail) in ops {
                let text = format!("{key}{tail}");
                if put {
                    let v = (key % 7 != 0).then(|| vec![key as f32, tail.len() as f32]);
                    c.put(&text, &v);
                    last.insert(text, v);
                } else if let Some(v) = c.get(&text) {
                    prop_assert_eq!(Some(&v), last.get(&text));
                }
                prop_assert!(c.len() <= CAPACITY);
            }
        }
    }
}
