//! The ONNX Runtime sessions of one model: the one made at open, and more made
//! when a batch (learn_batch, reembed, import) can embed several texts at once.
//!
//! Each session runs on one thread: with the runtime's threads not spinning
//! (spinning would hold a core while idle), a second intra-op thread makes one
//! text slower, not faster (a query: USE 1.09 → 1.41 ms, MiniLM 1.62 → 2.50 ms on
//! 2 cores), while two texts on two sessions take two cores fully. Sessions share
//! the mapped weights, so one more costs the runtime's own buffers, not the model.

use std::path::PathBuf;
use std::sync::OnceLock;

use ort::session::{builder::GraphOptimizationLevel, Session};
use parking_lot::Mutex;

use super::unavailable;
use crate::error::Result;

pub(crate) struct Sessions {
    env: &'static ort::environment::Environment,
    model: PathBuf,
    /// Slot 0 holds the session made at open; the others are made on first use
    /// by a batch (`None` inside: making it failed, the slot is not used).
    slots: Vec<OnceLock<Option<Mutex<Session>>>>,
}

impl Sessions {
    /// Up to `size` sessions of `model`, the first one `first`.
    pub(crate) fn new(
        env: &'static ort::environment::Environment,
        model: PathBuf,
        first: Session,
        size: usize,
    ) -> Self {
        let slots: Vec<_> = (0..size.max(1)).map(|_| OnceLock::new()).collect();
        let _ = slots[0].set(Some(Mutex::new(first)));
        Sessions { env, model, slots }
    }

    /// How many texts may be embedded at once.
    pub(crate) fn size(&self) -> usize {
        self.slots.len()
    }

    /// The session made at open.
    pub(crate) fn first(&self) -> &Mutex<Session> {
        self.slots[0].get().and_then(Option::as_ref).expect("the first session is made at open")
    }

    /// Runs `f` on a free session; with `grow` (a batch) a session not made yet is
    /// made for it; when every session is busy, waits for the first.
    pub(crate) fn with<T>(&self, grow: bool, f: impl FnOnce(&mut Session) -> T) -> T {
        for slot in &self.slots {
            let session = match slot.get() {
                Some(s) => s.as_ref(),
                None if grow => slot.get_or_init(|| create(self.env, &self.model).ok().map(Mutex::new)).as_ref(),
                None => None,
            };
            if let Some(mut s) = session.and_then(Mutex::try_lock) {
                return f(&mut s);
            }
        }
        f(&mut self.first().lock())
    }
}

/// A session of `model_path` (its external data, `model.data`, is memory-mapped by
/// ONNX Runtime) running on the calling thread alone.
// The builder's error type is ONNX Runtime's own (large); it is mapped at once.
#[allow(clippy::result_large_err)]
pub(crate) fn create(env: &ort::environment::Environment, model_path: &std::path::Path) -> Result<Session> {
    let fail = |e: &dyn std::fmt::Display| unavailable(format!("cannot load {}: {e}", model_path.display()));
    ort::session::builder::SessionBuilder::new(env)
        .map_err(|e| fail(&e))?
        .with_intra_threads(1)
        .and_then(|b| b.with_inter_threads(1))
        .and_then(|b| b.with_intra_op_spinning(false))
        .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::All))
        .map_err(|e| fail(&e))?
        .commit_from_file(model_path)
        .map_err(|e| fail(&e))
}
