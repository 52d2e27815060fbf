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
//! these modules): `error`, [`clock`], [`text`], [`types`], [`classify`], [`limits`],
//! [`embed`], [`options`], [`fingerprint`] (imports only `text`), [`replication`]
//! and [`render`] at the bottom; then [`store`]; [`search`] (reads the store);
//! [`dedup`] (the store and the indexes) and [`session`]; [`db`]; [`fleet`] and
//! `ffi` on top.

pub(crate) mod classify;
pub mod clock;
pub(crate) mod db;
pub(crate) mod dedup;
pub(crate) mod embed;
pub mod error;
pub mod ffi;
pub(crate) mod fingerprint;
pub mod fleet;
pub(crate) mod key;
pub mod limits;
pub mod options;
pub mod render;
pub(crate) mod replication;
pub(crate) mod search;
pub(crate) mod session;
pub(crate) mod store;
pub(crate) mod text;
pub mod types;

pub use clock::Clock;
/// Export and import of a database as JSON lines (the `robotmem export` / `import` format).
pub use db::transfer;
pub use db::Db;
pub use embed::FusionConfig;
pub use error::{Error, Result, Status};
pub use options::{Durability, Key, Location, OpenOptions};

/// Whether this build opens encrypted files (the cargo feature `encryption`).
pub const ENCRYPTION: bool = store::cipher::AVAILABLE;
pub use types::*;

/// Engine internals that the project's own tests and benchmarks reach: not an API,
/// no stability promise, hidden from the documentation.
#[doc(hidden)]
pub mod internals {
    pub mod embed {
        pub use crate::embed::{
            cosine, load, onnx, pool, runtime, unigram, EmbedSettings, Embedder, Embedding, ModelStamp, Pooling,
            TextKind,
        };
    }
    pub mod store {
        pub use crate::store::{schema, vectors, Store};
    }
    pub mod search {
        pub use crate::search::{filter, is_real_world, rrf_merge, vector, ContextFilter, LazyContext, SpatialSort};
    }
    pub mod session {
        pub use crate::session::decayed;
    }
    pub mod text {
        pub use crate::text::{cjk_share, fts_query, index_text, jaccard, jaccard_sets, numbers, summarize};
    }
    pub mod fingerprint {
        pub use crate::fingerprint::{meta_hash, Terms};
    }
}

/// The crate version (`CARGO_PKG_VERSION`), also returned by `rm_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
