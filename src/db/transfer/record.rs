//! One line of an export file (docs/EXPORT-FORMAT.md): written from the
//! database's rows, and read back with every field checked, each message naming
//! the field at fault.

use serde_json::{json, Map, Value};

use crate::classify;
use crate::embed::ModelStamp;
use crate::error::{Error, Result, Status};
use crate::limits::{self, MAX_CONTENT_CHARS, MAX_NAME_CHARS, MAX_REASON_CHARS, MIN_DESCRIPTION_CHARS};
use crate::render::base64;
use crate::store::transfer::{MemoryExtra, Outcome, SessionRecord};
use crate::types::{Memory, MemoryKind, MemoryStatus, PerceptionType};

/// The `format` of the header line.
pub const FORMAT: &str = "robotmem-export";
/// The format version this build writes and the newest it reads.
pub const VERSION: i64 = 1;
/// Automatic tags on one imported memory (the classifier gives far fewer).
const MAX_AUTO_TAGS: usize = 64;

/// A parsed line.
pub enum Line {
    Blank,
    Header(Header),
    Session(Box<SessionIn>),
    Memory(Box<MemoryIn>),
    /// A line without `kind`: an experience to learn (see [`learn_line`]).
    Learn(Box<LearnIn>),
}

/// A minimal line, `{"text": ..., "context"?, "session_id"?, "collection"?,
/// "tags"?, "time"?}`: stored as `learn` stores an experience (classified,
/// deduplicated, embedded), at `time` when given.
pub struct LearnIn {
    pub text: String,
    /// The context as learn takes it: a JSON object's text, or free text.
    pub context: Option<String>,
    pub session_id: Option<String>,
    pub collection: Option<String>,
    pub tags: Vec<String>,
    /// When it happened (RFC 3339, stored as UTC milliseconds); `None`: now.
    pub time: Option<String>,
    /// Expiry, as learn takes it.
    pub ttl_seconds: Option<f64>,
    pub expires_at: Option<String>,
}

/// The fields a minimal line may have.
const LEARN_FIELDS: [&str; 8] =
    ["text", "context", "session_id", "collection", "tags", "time", "ttl_seconds", "expires_at"];

pub struct Header {
    /// The stamp of the model whose vectors the file holds (only when it holds vectors).
    pub vectors_of: Option<ModelStamp>,
}

pub struct SessionIn {
    pub row: SessionRecord,
    pub outcomes: Vec<Outcome>,
}

/// A memory line, checked; collection, session, context and user tags are
/// checked again by `Db::draft` (which also classifies and hashes).
pub struct MemoryIn {
    /// Its id in the exporting database (for `superseded_by`).
    pub id: i64,
    pub kind: MemoryKind,
    pub collection: String,
    pub session_id: Option<String>,
    pub content: String,
    /// The stored context object, serialised.
    pub context: String,
    /// The user's part of it (what the classifier reads, see `classify::user_context`).
    pub user_context: String,
    pub context_map: Map<String, Value>,
    pub category: String,
    pub confidence: f64,
    pub decay_rate: f64,
    pub decay_base: f64,
    pub decay_next_at: Option<String>,
    pub status: MemoryStatus,
    pub superseded_by: Option<i64>,
    pub invalidated_reason: Option<String>,
    pub invalidated_at: Option<String>,
    pub access_count: i64,
    pub return_count: i64,
    pub last_accessed: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// `None`: never expires.
    pub expires_at: Option<String>,
    pub auto_tags: Vec<String>,
    pub user_tags: Vec<String>,
    pub perception: Option<(PerceptionType, Option<Vec<u8>>, Option<String>)>,
    /// The vector, when the file has one for this memory and names its model.
    pub vector: Option<Vec<f32>>,
    /// The file had a vector that cannot be kept (no model stamp in the header).
    pub vector_unstamped: bool,
}

// ---- writing ----

pub fn header_json(
    collection: Option<&str>,
    model: Option<&str>,
    vectors: bool,
    counts: (u64, u64),
    now: &str,
) -> Value {
    json!({
        "kind": "header", "format": FORMAT, "version": VERSION, "robotmem": crate::VERSION,
        "exported_at": now, "collection": collection, "vectors": vectors,
        "model": model, "sessions": counts.0, "memories": counts.1,
    })
}

pub fn session_json(s: &SessionRecord, outcomes: &[Outcome]) -> Value {
    json!({
        "kind": "session", "id": s.id, "collection": s.collection, "context": s.context,
        "status": s.status, "created_at": s.created_at, "ended_at": s.ended_at,
        "session_count": s.session_count, "client_type": s.client_type,
        "outcomes": outcomes.iter().map(|(score, at)| json!({"score": score, "created_at": at})).collect::<Vec<_>>(),
    })
}

pub fn memory_json(m: &Memory, x: &MemoryExtra, tags: &(Vec<String>, Vec<String>), vector: Option<&[f32]>) -> Value {
    let context = serde_json::from_str::<Value>(&m.context).unwrap_or_else(|_| Value::Object(Map::new()));
    json!({
        "kind": "memory", "id": m.id, "type": m.kind.as_str(), "collection": m.collection,
        "session_id": m.session_id, "content": m.content, "context": context,
        "category": m.category, "confidence": m.confidence,
        "decay_rate": m.decay_rate, "decay_base": x.decay_base, "decay_next_at": x.decay_next_at,
        "status": m.status.as_str(), "superseded_by": m.superseded_by,
        "invalidated_reason": x.invalidated_reason, "invalidated_at": x.invalidated_at,
        "access_count": m.access_count, "return_count": m.return_count, "last_accessed": m.last_accessed,
        "created_at": m.created_at, "updated_at": m.updated_at, "expires_at": m.expires_at,
        "auto_tags": tags.0, "user_tags": tags.1,
        "perception_type": m.perception_type.map(PerceptionType::as_str),
        "perception_data": m.perception_data.as_deref().map(base64),
        "perception_metadata": m.perception_metadata,
        "vector": vector.map(|v| base64(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())),
    })
}

// ---- reading ----

/// Parses and checks one line. `stamp` is the model of the vectors of the last
/// header line, if it had vectors.
pub fn parse(text: &str, stamp: Option<&ModelStamp>) -> Result<Line> {
    if text.trim().is_empty() {
        return Ok(Line::Blank);
    }
    let v: Value = serde_json::from_str(text).map_err(|e| Error::invalid(format!("not valid JSON: {e}")))?;
    let Value::Object(obj) = v else { return Err(Error::invalid("a line must be a JSON object")) };
    let f = Fields(&obj);
    if !obj.contains_key("kind") {
        return learn_line(&f).map(|l| Line::Learn(Box::new(l)));
    }
    match f.str("kind")? {
        "header" => header(&f).map(Line::Header),
        "session" => session(&f).map(|s| Line::Session(Box::new(s))),
        "memory" => memory(&f, stamp).map(|m| Line::Memory(Box::new(m))),
        k => Err(Error::invalid(format!("kind {k:?} is not one of header, session, memory"))),
    }
}

/// A line without `kind`: only [`LEARN_FIELDS`], `text` required.
fn learn_line(f: &Fields) -> Result<LearnIn> {
    if let Some(k) = f.0.keys().find(|k| !LEARN_FIELDS.contains(&k.as_str())) {
        return Err(Error::invalid(format!(
            "{k:?} is not a field of a line to learn ({}; a line of an export has \"kind\")",
            LEARN_FIELDS.join(", ")
        )));
    }
    let text = limits::required_text("text", f.str("text")?, 1, MAX_CONTENT_CHARS)?.to_string();
    let context = match f.get("context") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(v) => return Err(Error::invalid(format!("context must be an object or a string (got {})", kind_of(v)))),
    };
    Ok(LearnIn {
        text,
        context,
        session_id: f.opt_str("session_id")?.map(str::to_string),
        collection: f.opt_str("collection")?.map(str::to_string),
        tags: f.strs("tags")?.into_iter().map(str::to_string).collect(),
        time: f.opt_time("time")?,
        ttl_seconds: f.opt_num("ttl_seconds")?,
        expires_at: f.opt_time("expires_at")?,
    })
}

fn header(f: &Fields) -> Result<Header> {
    if f.str("format")? != FORMAT {
        return Err(Error::invalid(format!("format must be {FORMAT:?}")));
    }
    let version = f.int("version")?;
    if version > VERSION {
        return Err(Error::new(
            Status::SchemaTooNew,
            format!("version {version} is newer than this robotmem reads ({VERSION}); upgrade robotmem"),
        ));
    }
    let vectors = f.opt_bool("vectors")?.unwrap_or(false);
    let vectors_of = match (vectors, f.opt_str("model")?) {
        (true, Some(m)) => Some(
            parse_stamp(m)
                .ok_or_else(|| Error::invalid(format!("model {m:?} is not a model stamp (name/dim/hash)")))?,
        ),
        _ => None,
    };
    Ok(Header { vectors_of })
}

/// A model stamp as stored (`name/dim/hash`; the name may hold `/`).
pub fn parse_stamp(s: &str) -> Option<ModelStamp> {
    let mut parts = s.rsplitn(3, '/');
    let (hash, dim, name) = (parts.next()?, parts.next()?, parts.next()?);
    let dim: usize = dim.parse().ok().filter(|d| (1..=65536).contains(d))?;
    (!name.is_empty() && !hash.is_empty()).then(|| ModelStamp { name: name.to_string(), dim, hash: hash.to_string() })
}

fn session(f: &Fields) -> Result<SessionIn> {
    let id =
        limits::optional_session(Some(f.str("id")?))?.ok_or_else(|| Error::invalid("id must not be empty or blank"))?;
    let status = f.str("status")?;
    if status != "active" && status != "ended" {
        return Err(Error::invalid(format!("status {status:?} is not one of active, ended")));
    }
    let context = limits::context("context", f.opt_str("context")?)?;
    let mut outcomes = Vec::new();
    for (i, o) in f.list("outcomes")?.iter().enumerate() {
        let at = |e: Error| Error::invalid(format!("outcomes[{i}]: {}", e.message));
        let Value::Object(o) = o else { return Err(at(Error::invalid("must be an object"))) };
        let o = Fields(o);
        let score = o
            .opt_num("score")
            .and_then(|s| s.map(|s| limits::unit_range("score", s, 0.0, 1.0)).transpose())
            .map_err(at)?;
        outcomes.push((score, o.time("created_at").map_err(at)?));
    }
    let session_count = f.opt_int("session_count")?.unwrap_or(1);
    if session_count < 1 {
        return Err(Error::invalid(format!("session_count must be at least 1 (got {session_count})")));
    }
    Ok(SessionIn {
        row: SessionRecord {
            id: id.to_string(),
            collection: collection(f)?.to_string(),
            context: Some(context).filter(|c| !c.is_empty()),
            session_count,
            status: status.to_string(),
            client_type: limits::required_text(
                "client_type",
                f.opt_str("client_type")?.unwrap_or("c_api"),
                1,
                MAX_NAME_CHARS,
            )?
            .to_string(),
            created_at: f.time("created_at")?,
            ended_at: f.opt_time("ended_at")?,
        },
        outcomes,
    })
}

/// A line's collection: required, not blank.
fn collection<'a>(f: &Fields<'a>) -> Result<&'a str> {
    match limits::collection(Some(f.str("collection")?), "")? {
        "" => Err(Error::invalid("collection must not be empty or blank")),
        c => Ok(c),
    }
}

fn memory(f: &Fields, stamp: Option<&ModelStamp>) -> Result<MemoryIn> {
    let id = f.int("id")?;
    limits::memory_id(id).map_err(|_| Error::invalid(format!("id must be > 0 (got {id})")))?;
    let kind = match f.str("type")? {
        "fact" => MemoryKind::Fact,
        "perception" => MemoryKind::Perception,
        t => return Err(Error::invalid(format!("type {t:?} is not one of fact, perception"))),
    };
    let min = if kind == MemoryKind::Fact { 1 } else { MIN_DESCRIPTION_CHARS };
    let content = limits::required_text("content", f.str("content")?, min, MAX_CONTENT_CHARS)?.to_string();
    let context_map = f.object("context")?.clone();
    let context = serde_json::to_string(&context_map)?;
    let category = f.str("category")?;
    if !classify::CATEGORIES.contains(&category) {
        return Err(Error::invalid(format!("category {category:?} is not one of {}", classify::CATEGORIES.join(", "))));
    }
    let confidence = limits::unit_range("confidence", f.num("confidence")?, 0.0, 1.0)?;
    let status = match f.str("status")? {
        "active" => MemoryStatus::Active,
        "superseded" => MemoryStatus::Superseded,
        "invalidated" => MemoryStatus::Invalidated,
        s => return Err(Error::invalid(format!("status {s:?} is not one of active, superseded, invalidated"))),
    };
    let superseded_by = f.opt_int("superseded_by")?;
    match superseded_by {
        Some(_) if status != MemoryStatus::Superseded => {
            return Err(Error::invalid("superseded_by is set but status is not superseded"))
        }
        Some(by) if by <= 0 => return Err(Error::invalid(format!("superseded_by must be > 0 (got {by})"))),
        _ => {}
    }
    let invalidated_reason = f.opt_str("invalidated_reason")?;
    if invalidated_reason.is_some() && status != MemoryStatus::Invalidated {
        return Err(Error::invalid("invalidated_reason is set but status is not invalidated"));
    }
    let perception = match (kind, f.opt_str("perception_type")?) {
        (MemoryKind::Fact, None) => None,
        (MemoryKind::Fact, Some(_)) => return Err(Error::invalid("perception_type is set on a fact")),
        (MemoryKind::Perception, None) => return Err(Error::invalid("perception_type is missing")),
        (MemoryKind::Perception, Some(t)) => {
            let data = f.opt_str("perception_data")?.map(|d| decode("perception_data", d)).transpose()?;
            if let Some(d) = &data {
                limits::perception_data("perception_data", d)?;
            }
            let meta = limits::perception_metadata("perception_metadata", f.opt_str("perception_metadata")?)?;
            Some((PerceptionType::parse(t)?, data, meta.map(str::to_string)))
        }
    };
    if kind == MemoryKind::Fact && (f.get("perception_data").is_some() || f.get("perception_metadata").is_some()) {
        return Err(Error::invalid("perception_data or perception_metadata is set on a fact"));
    }
    let vector = f.opt_str("vector")?.map(|v| decode_vector(v, stamp)).transpose()?;
    let auto: Vec<&str> = f.strs("auto_tags")?;
    let user: Vec<&str> = f.strs("user_tags")?;
    Ok(MemoryIn {
        id,
        kind,
        collection: collection(f)?.to_string(),
        session_id: f.opt_str("session_id")?.map(str::to_string),
        content,
        user_context: classify::user_context(&context),
        context,
        context_map,
        category: category.to_string(),
        confidence,
        decay_rate: limits::unit_range("decay_rate", f.num("decay_rate")?, 0.0, 1.0)?,
        decay_base: f
            .opt_num("decay_base")?
            .map(|b| limits::unit_range("decay_base", b, 0.0, 1.0))
            .transpose()?
            .unwrap_or(confidence),
        decay_next_at: f.opt_time("decay_next_at")?,
        status,
        superseded_by,
        invalidated_reason: invalidated_reason
            .map(|r| limits::required_text("invalidated_reason", r, 1, MAX_REASON_CHARS))
            .transpose()?
            .map(str::to_string),
        invalidated_at: f.opt_time("invalidated_at")?,
        access_count: f.count("access_count")?,
        return_count: f.count("return_count")?,
        last_accessed: f.opt_time("last_accessed")?,
        created_at: f.time("created_at")?,
        updated_at: f.time("updated_at")?,
        expires_at: f.opt_time("expires_at")?,
        auto_tags: limits::tag_list("auto_tags", &auto, MAX_AUTO_TAGS)?,
        user_tags: limits::tag_list("user_tags", &user, limits::MAX_USER_TAGS)?,
        perception,
        vector_unstamped: vector.is_some() && stamp.is_none(),
        vector: vector.filter(|_| stamp.is_some()),
    })
}

/// A vector: base64 of little-endian f32, as many as the model's dimension, finite.
fn decode_vector(b64: &str, stamp: Option<&ModelStamp>) -> Result<Vec<f32>> {
    let bytes = decode("vector", b64)?;
    let v: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if !bytes.len().is_multiple_of(4) || v.iter().any(|x| !x.is_finite()) {
        return Err(Error::invalid("vector is not a sequence of finite little-endian f32 values"));
    }
    if let Some(m) = stamp.filter(|m| m.dim != v.len()) {
        return Err(Error::invalid(format!("vector has {} values; the header's model has {}", v.len(), m.dim)));
    }
    Ok(v)
}

/// Standard base64 with padding (RFC 4648), as [`base64`] writes it.
pub fn decode(field: &str, s: &str) -> Result<Vec<u8>> {
    let bad = || Error::invalid(format!("{field} is not valid base64 (RFC 4648, with padding)"));
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return Err(bad());
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, q) in b.chunks(4).enumerate() {
        let last = i == b.len() / 4 - 1;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err(bad());
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = n << 6 | val(c).ok_or_else(bad)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Ok(out)
}

/// A JSON object's fields; `null` is the same as absent. Messages name the field.
struct Fields<'a>(&'a Map<String, Value>);

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Fields<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn typed<T>(&self, name: &str, what: &str, read: impl Fn(&'a Value) -> Option<T>) -> Result<Option<T>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => {
                read(v).map(Some).ok_or_else(|| Error::invalid(format!("{name} must be {what} (got {})", kind_of(v))))
            }
        }
    }

    fn required<T>(&self, name: &str, v: Option<T>) -> Result<T> {
        v.ok_or_else(|| Error::invalid(format!("{name} is missing")))
    }

    fn opt_str(&self, name: &str) -> Result<Option<&'a str>> {
        self.typed(name, "a string", Value::as_str)
    }
    fn str(&self, name: &str) -> Result<&'a str> {
        self.required(name, self.opt_str(name)?)
    }
    fn opt_num(&self, name: &str) -> Result<Option<f64>> {
        self.typed(name, "a number", Value::as_f64)
    }
    fn num(&self, name: &str) -> Result<f64> {
        self.required(name, self.opt_num(name)?)
    }
    fn opt_int(&self, name: &str) -> Result<Option<i64>> {
        self.typed(name, "an integer", Value::as_i64)
    }
    fn int(&self, name: &str) -> Result<i64> {
        self.required(name, self.opt_int(name)?)
    }
    fn opt_bool(&self, name: &str) -> Result<Option<bool>> {
        self.typed(name, "true or false", Value::as_bool)
    }
    /// A count: an integer ≥ 0; absent is 0.
    fn count(&self, name: &str) -> Result<i64> {
        match self.opt_int(name)?.unwrap_or(0) {
            n if n < 0 => Err(Error::invalid(format!("{name} must be >= 0 (got {n})"))),
            n => Ok(n),
        }
    }
    fn object(&self, name: &str) -> Result<&'a Map<String, Value>> {
        self.required(name, self.typed(name, "an object", Value::as_object)?)
    }
    /// An array; absent is empty.
    fn list(&self, name: &str) -> Result<&'a [Value]> {
        Ok(self.typed(name, "an array", |v| v.as_array().map(Vec::as_slice))?.unwrap_or_default())
    }
    /// An array of strings; absent is empty.
    fn strs(&self, name: &str) -> Result<Vec<&'a str>> {
        self.list(name)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().ok_or_else(|| Error::invalid(format!("{name}[{i}] must be a string (got {})", kind_of(v))))
            })
            .collect()
    }
    fn opt_time(&self, name: &str) -> Result<Option<String>> {
        self.opt_str(name)?.map(|t| limits::timestamp(name, t)).transpose()
    }
    fn time(&self, name: &str) -> Result<String> {
        limits::timestamp(name, self.str(name)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for n in 0..40usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(decode("d", &base64(&data)).unwrap(), data, "{n} bytes");
        }
        for bad in ["A", "AB=C", "A===", "AB==AB==", "AB\nC", "ÄÄÄÄ"] {
            assert!(decode("perception_data", bad).unwrap_err().message.starts_with("perception_data "), "{bad:?}");
        }
    }

    #[test]
    fn stamps() {
        let m = parse_stamp("org/model-x/384/abc").unwrap();
        assert_eq!((m.name.as_str(), m.dim, m.hash.as_str()), ("org/model-x", 384, "abc"));
        assert_eq!(m.encode(), "org/model-x/384/abc");
        assert!(parse_stamp("x/0/abc").is_none() && parse_stamp("384/abc").is_none() && parse_stamp("x/y/z").is_none());
    }

    #[test]
    fn messages_name_the_field() {
        let err = |line: &str| match parse(line, None) {
            Err(e) => e.message,
            Ok(_) => panic!("accepted {line}"),
        };
        assert!(err("{").starts_with("not valid JSON"));
        assert_eq!(err("[1]"), "a line must be a JSON object");
        assert_eq!(err(r#"{"kind": 3}"#), "kind must be a string (got a number)");
        assert_eq!(
            err(r#"{"kind": "header", "format": "robotmem-export", "version": 2}"#),
            "version 2 is newer than this robotmem reads (1); upgrade robotmem"
        );
        let base = r#""kind": "memory", "id": 1, "type": "fact", "collection": "c", "context": {}, "category": "code",
            "confidence": 0.9, "decay_rate": 0.01, "status": "active", "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z""#;
        assert!(matches!(parse(&format!(r#"{{{base}, "content": "ok"}}"#), None), Ok(Line::Memory(_))));
        assert_eq!(err(&format!("{{{base}}}")), "content is missing");
        assert_eq!(err(&format!(r#"{{{base}, "content": 5}}"#)), "content must be a string (got a number)");
        assert!(
            err(&format!(r#"{{{base}, "content": "{}"}}"#, "x".repeat(301))).starts_with("content has 301 characters")
        );
        assert_eq!(
            err(&format!(r#"{{{base}, "content": "ok", "user_tags": [1]}}"#)),
            "user_tags[0] must be a string (got a number)"
        );
    }
}
