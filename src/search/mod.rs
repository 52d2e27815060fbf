//! Search stage: four in-process indexes over the memories table and the recall
//! pipeline that ranks with them.
//!
//! - [`text`]: BM25 postings of the memories' words, pruned ranking, its stored snapshot;
//! - [`vector`]: the embeddings, int8-quantised, for KNN and cosines;
//! - [`spatial`]: the coordinates spatial_sort orders by (a grid per field);
//! - [`columns`]: the context values context_filter pre-selects by;
//! - [`recall`]: the pipeline (plan → candidates → constraints → fusion → top n),
//!   one entry, [`recall::run`], which chooses hybrid or BM25-only recall.
//!
//! Shared by them: [`filter`] (the parsed context_filter and spatial_sort),
//! `paths` (what the two per-path indexes, spatial and columns, share) and
//! `snapshot` (the codec of the copies stored in the file). The indexes follow
//! the memories table by `rev` and never import the pipeline.

pub mod columns;
pub mod filter;
mod paths;
pub mod recall;
mod snapshot;
pub mod spatial;
pub mod text;
pub mod vector;

pub use filter::{ContextFilter, LazyContext, SpatialSort};
pub use recall::{is_real_world, rrf_merge, Plan};
