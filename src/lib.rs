//! robotmem — long-term memory engine for robots.
//!
//! One SQLite file, no server: [`Db::learn`] stores an experience (auto-classified,
//! deduplicated), [`Db::recall`] ranks experiences for a query (BM25 from an
//! in-process index with jieba segmentation of Chinese, fused with vector search when
//! a model is loaded, real-world boost, structured context filters, spatial
//! nearest-neighbour sort), sessions bracket episodes (decay, consolidation,
//! proactive recall). The same engine is exported as a C ABI (`include/robotmem.h`).
//!
//! Stages, one module each. A learn goes [`classify`] → [`fingerprint`] (content
//! hash, word set, numbers, outcome) → [`dedup`] → [`store`]; a recall goes
//! through [`search`]: its in-process indexes (text, vector, spatial, context
//! columns), synced from the store, then the pipeline `search::recall` (BM25 or
//! hybrid, constraints, top n); [`session`] brackets episodes. [`db`] ties them
//! together; [`fleet`] (hub client, sync agent) and `ffi` (the C boundary) drive a
//! [`Db`].
//!
//! Layers call down only (`tests/layers.rs` fails on an import cycle between
//! these modules): `error`, [`text`], [`types`], [`classify`], [`limits`],
//! [`embed`], [`options`], [`fingerprint`] (imports only `text`), [`replication`]
//! and [`render`] at the bottom; then [`store`]; [`search`] (reads the store);
//! [`dedup`] (the store and the indexes) and [`session`]; [`db`]; [`fleet`] and
//! `ffi` on top.

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
