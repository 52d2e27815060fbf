//! Hybrid recall: the BM25 list and the vector (KNN) list, each made of memories
//! that pass every filter (filters apply *before* the lists are cut, so a
//! selective context_filter still yields n results when n memories match), cut
//! at the fusion depth; every memory of either list is scored on both signals
//! (its BM25 share from the text index, its cosine from the vector index) and
//! fused as [`super::fusion`] says; real-world ×1.5, top n; then a constrained
//! recall is filled with other memories that satisfy its constraints. With
//! spatial_sort the n nearest of all memories that satisfy the constraints are
//! returned, the fused score breaking distance ties.
//!
//! Modes: both lists non-empty → hybrid; only one → bm25_only / vec_only (the
//! other found nothing: no memory holds a query word, or no neighbour is above
//! the model's cosine floor).

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension};

use super::candidates::{self, Candidate, Lookup, Rows};
use super::constrained::{self, Relevance};
use super::fusion;
use super::rank::{admit, normalise, quality, REAL_WORLD_BOOST};
use super::{Plan, Ranked};
use crate::embed::FusionConfig;
use crate::error::Result;
use crate::search::text::TextIndex;
use crate::search::vector::{Nearest, Neighbours, Searcher};
use crate::store::vectors;
use crate::text::Script;
use crate::types::SearchMode;

/// Smallest number of entries taken from each list.
pub const MIN_FUSION_DEPTH: usize = 40;

/// Entries taken from each list for `n` results.
pub fn fusion_depth(n: usize) -> usize {
    (n * 4).clamp(MIN_FUSION_DEPTH, vectors::MAX_K)
}

/// What a hybrid recall searches with.
pub struct Query<'a> {
    pub vector: &'a [f32],
    pub near: Nearest<'a>,
    pub fusion: FusionConfig,
    /// The query text's CJK share (`crate::text::cjk_share`).
    pub query_cjk: f64,
}

impl Query<'_> {
    /// Cosine of a stored memory's vector to the query's; `None` without one.
    fn cosine(&self, id: i64) -> Option<f64> {
        self.cosine_of(self.near.index.vector(id)?)
    }

    fn cosine_of(&self, v: Vec<f32>) -> Option<f64> {
        Some(crate::embed::cosine(self.vector, &v) as f64)
    }

    /// The relevance of a memory (`cross`: in another script than the query)
    /// at lexical weight `w` (`fusion::weight`); `spread`: the query's
    /// other-script neighbours, when the model's fusion standardises by them.
    fn relevance(
        &self,
        w: f64,
        lexical: f64,
        cosine: Option<f64>,
        is_real: bool,
        cross: bool,
        spread: Option<fusion::Spread>,
    ) -> Option<Relevance> {
        let by_vector = cosine.is_some_and(|c| fusion::above_floor(&self.fusion, c));
        if lexical <= 0.0 && !by_vector {
            return None;
        }
        let boost = if is_real { REAL_WORLD_BOOST } else { 1.0 };
        let semantic = cosine.map(|c| fusion::semantic_of(&self.fusion, c, cross, spread));
        let score = fusion::score(w, lexical, semantic) * boost;
        Some(Relevance { score, lexical: (lexical > 0.0).then_some(lexical), cosine })
    }
}

/// The spread of the cosines of the other-script memories (`cross`) among the
/// query's nearest neighbours (`nearest`: cosine and id), when the model's
/// fusion standardises by it.
fn spread(f: &FusionConfig, cross: &HashSet<i64>, nearest: &[(f32, i64)]) -> Option<fusion::Spread> {
    f.cross_script_z?;
    let cosines: Vec<f64> = nearest.iter().filter(|(_, id)| cross.contains(id)).map(|&(c, _)| c as f64).collect();
    fusion::Spread::of(&cosines)
}

/// Which of `ids` are written in another script than the query (only asked
/// when the model's fusion treats such memories differently). The text index
/// (synced in this read transaction) keeps each memory's script class, so no
/// content is read; a memory it does not hold (written after the index was
/// synced) is read from its row.
fn other_script(
    conn: &Connection,
    index: &TextIndex,
    f: &FusionConfig,
    query_cjk: f64,
    ids: &[i64],
) -> Result<HashSet<i64>> {
    let mut out = HashSet::new();
    if (f.cross_script == 1.0 && f.cross_script_z.is_none()) || ids.is_empty() {
        return Ok(out);
    }
    let query = Script::of_share(query_cjk);
    for (&id, script) in ids.iter().zip(index.scripts(ids)) {
        let script = match script {
            Some(s) => Some(s),
            None => {
                let mut st = conn.prepare_cached("SELECT content FROM memories WHERE id = ?1")?;
                let content: Option<String> = st.query_row([id], |r| r.get(0)).optional()?;
                content.map(|c| Script::of(&c))
            }
        };
        if script.is_some_and(|s| fusion::other_script(query, s)) {
            out.insert(id);
        }
    }
    Ok(out)
}

/// An accepted list entry.
#[derive(Clone)]
struct Entry {
    id: i64,
    is_real: bool,
    lexical: Option<f64>,
    cosine: Option<f64>,
    distance: Option<f64>,
}

fn accept(plan: &Plan, c: Candidate, cosine: Option<f64>) -> Option<Entry> {
    let distance = admit(plan, &c)?;
    Some(Entry { id: c.id, is_real: c.is_real, lexical: c.lexical, cosine, distance })
}

/// The BM25 list of a hybrid recall (made before the query's vector is needed);
/// `None` with spatial_sort, which ranks otherwise. `rows`: how its candidates
/// were read (the vector list's are read the same way).
pub(super) struct Words {
    list: Option<Vec<Entry>>,
    rows: Rows,
}

/// The BM25 list: memories that pass every filter, in BM25 order, at most the
/// fusion depth. Its candidates are read from the recall index where the plan
/// allows it ([`Rows::Index`]), else from their rows.
pub(super) fn words_list(conn: &Connection, index: &TextIndex, plan: &Plan) -> Result<Words> {
    let rows = if Lookup::index_allowed(conn, plan)? { Rows::Index } else { Rows::Full };
    words_list_with(conn, index, plan, rows)
}

fn words_list_with(conn: &Connection, index: &TextIndex, plan: &Plan, rows: Rows) -> Result<Words> {
    if plan.spatial.is_some() {
        return Ok(Words { list: None, rows });
    }
    let depth = fusion_depth(plan.n);
    let mut by_words = Vec::new();
    if !plan.words.is_empty() {
        let ranking = candidates::ranking(conn, index, plan)?;
        candidates::for_each_ranked(conn, ranking, plan, rows, |c| {
            if let Some(e) = accept(plan, c, None) {
                by_words.push(e);
            }
            Ok(by_words.len() < depth)
        })?;
    }
    Ok(Words { list: Some(by_words), rows })
}

/// Runs the plan with `q` as the second list and `words` ([`words_list`]) as the
/// first. `q.near` is synced in this read transaction.
///
/// Lists read from the recall index leave a context filter to the columns; the
/// results' rows are then checked against it, and if one's stored context does
/// not satisfy it (a change the columns did not see: a write from outside
/// robotmem that left `rev` alone), the recall is made again with every
/// candidate's row read, as it was before the recall index.
pub(super) fn run(
    conn: &Connection,
    index: &TextIndex,
    plan: &Plan,
    q: &Query,
    words: Words,
) -> Result<(Vec<Ranked>, SearchMode)> {
    if plan.spatial.is_some() {
        index.sync(conn)?;
        // Distance orders these results; the fused score only breaks its ties, at
        // the model's weight for the query's script.
        let out = constrained::nearest(conn, plan, |id, is_real| {
            let lexical = index.shares(plan.collection, &plan.words, &[id])[0];
            let cross = !other_script(conn, index, &q.fusion, q.query_cjk, &[id])?.is_empty();
            Ok(q.relevance(fusion::weight(&q.fusion, cross), lexical, q.cosine(id), is_real, cross, None))
        })?;
        return Ok((out, SearchMode::Hybrid));
    }
    if plan.words.is_empty() {
        index.sync(conn)?; // for the scripts (a BM25 list, made for any word, synced it)
    }
    let rows = words.rows;
    if let Some(out) = fused(conn, index, plan, q, words, rows)? {
        return Ok(out);
    }
    let words = words_list_with(conn, index, plan, Rows::Full)?;
    fused(conn, index, plan, q, words, Rows::Full)?
        .ok_or_else(|| crate::error::Error::internal("a recall reading every row left a result unchecked"))
}

/// Whether the stored context of each of `out` satisfies the plan's filter (and
/// its row every other condition).
fn contexts_hold(conn: &Connection, plan: &Plan, out: &[Ranked]) -> Result<bool> {
    let mut lookup = Lookup::new(conn, plan)?;
    for r in out {
        if lookup.get(r.id, None)?.and_then(|c| admit(plan, &c)).is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The two lists, their fusion and the fill of a constrained recall; `None` when
/// the lists were read from the recall index and a result's stored context
/// does not satisfy the filter ([`run`]).
fn fused(
    conn: &Connection,
    index: &TextIndex,
    plan: &Plan,
    q: &Query,
    words: Words,
    rows: Rows,
) -> Result<Option<(Vec<Ranked>, SearchMode)>> {
    let depth = fusion_depth(plan.n);
    let checker = plan.checker(conn)?;
    let admit = checker.map(|c| move |id| c.admits(id));
    let mut searcher = q.near.searcher(q.vector, admit.as_ref().map(|a| a as &dyn Fn(i64) -> bool))?;
    let (mut by_vector, nearest) = vector_list(conn, plan, q, &mut searcher, depth, rows)?;
    let mut by_words = match words.list {
        Some(list) => list,
        None => words_list_with(conn, index, plan, rows)?.list.unwrap_or_default(),
    };
    let mode = match (by_words.is_empty(), by_vector.is_empty()) {
        (false, true) => SearchMode::Bm25Only,
        (true, false) => SearchMode::VecOnly,
        _ => SearchMode::Hybrid,
    };
    // Each memory on both signals: the BM25 list's cosines (from the vector list
    // when it is there too, else from the index), the vector list's shares.
    let known: HashMap<i64, Option<f64>> = by_vector.iter().map(|e| (e.id, e.cosine)).collect();
    for e in &mut by_words {
        // Under the searcher's read lock, held until the spread is known.
        e.cosine = known.get(&e.id).copied().unwrap_or_else(|| searcher.vector(e.id).and_then(|v| q.cosine_of(v)));
    }
    let ids: Vec<i64> = by_vector.iter().map(|e| e.id).collect();
    for (e, share) in by_vector.iter_mut().zip(index.shares(plan.collection, &plan.words, &ids)) {
        e.lexical = (share > 0.0).then_some(share);
    }
    // The memories in another script, for the weights of the model's fusion:
    // one read per memory of both lists, only when the model's fusion looks at
    // scripts. If one is, and the fusion standardises their cosines, the spread
    // of the query's other-script neighbours among its nearest of all (for a
    // filtered recall a second search, made only then; the same under the
    // searcher's read lock whenever it is made).
    let mut ids: Vec<i64> = by_words.iter().chain(&by_vector).map(|e| e.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut cross = other_script(conn, index, &q.fusion, q.query_cjk, &ids)?;
    let spread = match q.fusion.cross_script_z {
        Some(_) if !cross.is_empty() => {
            let nearest = nearest.unwrap_or_else(|| searcher.knn(depth));
            let more: Vec<i64> =
                nearest.iter().map(|&(_, id)| id).filter(|id| ids.binary_search(id).is_err()).collect();
            cross.extend(other_script(conn, index, &q.fusion, q.query_cjk, &more)?);
            spread(&q.fusion, &cross, &nearest)
        }
        _ => None,
    };
    drop(searcher);
    let mut fused: HashMap<i64, Ranked> = HashMap::new();
    for e in by_words.into_iter().chain(by_vector) {
        if fused.contains_key(&e.id) {
            continue;
        }
        let other = cross.contains(&e.id);
        let w = fusion::weight(&q.fusion, other);
        let Some(r) = q.relevance(w, e.lexical.unwrap_or(0.0), e.cosine, e.is_real, other, spread) else { continue };
        let hit = Ranked {
            id: e.id,
            score: r.score,
            lexical: r.lexical,
            cosine: r.cosine,
            distance: e.distance,
            matched: true,
        };
        fused.insert(e.id, hit);
    }
    let mut out: Vec<Ranked> = fused.into_values().collect();
    out.sort_by(|a, b| quality(b, a, false));
    out.truncate(plan.n);
    if rows == Rows::Index && plan.filter.is_some() && !contexts_hold(conn, plan, &out)? {
        return Ok(None);
    }
    normalise(&mut out);
    constrained::fill_newest(conn, plan, &mut out)?;
    Ok(Some((out, mode)))
}

/// A context filter that admits at most this many memories is searched among
/// them alone (each scored); a wider one is applied inside the index's search,
/// so that it does not have to be asked for ever more neighbours until enough
/// pass the filter.
const FEW_ADMITTED: usize = 2048;

/// Memories nearest to the query that pass the filters and are above the
/// model's cosine floor, nearest first, at most `depth`; and, when they came
/// with them (no context filter), the `depth` nearest neighbours of all
/// (cosine, id), whatever the floor and the filters. `searcher` holds the
/// filter's columns. Asks for more neighbours while filters reject too many
/// (those the columns cannot check: session, confidence); each memory is looked
/// up and filtered once, however many rounds it appears in.
fn vector_list(
    conn: &Connection,
    plan: &Plan,
    q: &Query,
    searcher: &mut Searcher,
    depth: usize,
    rows: Rows,
) -> Result<(Vec<Entry>, Option<Neighbours>)> {
    let mut lookup = Lookup::with(conn, plan, rows)?;
    let mut seen: HashMap<i64, Option<Entry>> = HashMap::new();
    // Nearly every neighbour is accepted unless a session condition (or a
    // context filter the columns cannot check) rejects some: then start wider
    // than a second round would.
    let checker = plan.checker(conn)?;
    let selective =
        (plan.filter.is_some() && checker.is_none()) || plan.session_id.is_some() || plan.exclude_session.is_some();
    let mut k = if selective { depth * 4 } else { depth + depth / 4 };
    let few = checker
        .map(|c| c.newest_first().take(FEW_ADMITTED + 1).collect::<Vec<i64>>())
        .filter(|ids| ids.len() <= FEW_ADMITTED);
    let mut nearest: Option<Neighbours> = None;
    loop {
        let found = match &few {
            Some(ids) => searcher.knn_among(ids, k),
            None => searcher.knn_filtered(k),
        };
        if checker.is_none() && nearest.is_none() {
            nearest = Some(found.iter().take(depth).copied().collect());
        }
        let exhausted = found.len() < k;
        let mut out = Vec::with_capacity(depth);
        for (cosine, id) in found {
            if !fusion::above_floor(&q.fusion, cosine as f64) {
                // Nearest first: the rest are below the floor too.
                return Ok((out, nearest));
            }
            let entry = match seen.get(&id) {
                Some(e) => e.clone(),
                None => {
                    let e = lookup.get(id, None)?.and_then(|c| accept(plan, c, Some(cosine as f64)));
                    seen.insert(id, e.clone());
                    e
                }
            };
            if let Some(e) = entry {
                out.push(e);
                if out.len() == depth {
                    return Ok((out, nearest));
                }
            }
        }
        if exhausted {
            return Ok((out, nearest));
        }
        k *= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_come_from_the_text_index_else_from_the_row() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT);
             INSERT INTO memories VALUES (1, 'grasp the mug'), (2, 'grasp the mug'), (3, '抓取杯子');",
        )
        .unwrap();
        // Memory 1 is in the index with a Chinese text (its row is not read), 2 and
        // 3 are not (their rows are), 9 is nowhere.
        let index = TextIndex::of(&[(1, "c", "抓取杯子成功")]);
        let f = FusionConfig { cross_script: 0.0, ..FusionConfig::new(0.6, 0.3, 0.8) };
        let ids = [1, 2, 3, 9];
        let other = |q: f64| {
            let mut v: Vec<i64> = other_script(&conn, &index, &f, q, &ids).unwrap().into_iter().collect();
            v.sort_unstable();
            v
        };
        assert_eq!(other(1.0), [2], "a Chinese query");
        assert_eq!(other(0.0), [1, 3], "an English one");
        assert!(other(0.3).is_empty(), "a mixed one");
        // Without a cross-script setting nothing is looked at.
        let plain = FusionConfig::new(0.6, 0.3, 0.8);
        assert!(other_script(&conn, &index, &plain, 1.0, &ids).unwrap().is_empty());
    }
}
