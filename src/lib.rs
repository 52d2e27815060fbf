//! robotmem — long-term memory engine for robots.
//!
//! One SQLite file, no server: [`Db::learn`] stores an experience (auto-classified,
//! deduplicated), [`Db::recall`] ranks experiences for a query (BM25 from an
//! in-process index with jieba segmentation of Chinese, fused with vector search when
//! a model is loaded, real-world boost, structured context filters, spatial
//! nearest-neighbour sort), sessions bracket episodes (decay, consolidation,
//! proactive recall). The same engine is exported as a C ABI (`include/robotmem.h`).
//!
//! Stages, one module each: [`classify`] → [`dedup`] → [`store`] → [`search`] →
//! [`session`]; [`db`] ties them together; `ffi` is the C boundary.

pub mod classify;
pub mod db;
pub mod dedup;
pub mod embed;
pub mod error;
pub mod ffi;
pub mod fingerprint;
pub mod fleet;
pub mod limits;
pub mod options;
pub mod render;
pub mod replication;
pub mod search;
pub mod session;
pub mod store;
pub mod text;
pub mod types;

pub use db::Db;
pub use embed::FusionConfig;
pub use error::{Error, Result, Status};
pub use options::{Durability, Location, OpenOptions};
pub use types::*;

/// The crate version (`CARGO_PKG_VERSION`), also returned by `rm_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
