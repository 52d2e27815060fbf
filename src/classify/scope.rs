//! Scope extraction: files, code entities and modules a memory refers to,
//! plus normalisation of file lists to project-relative paths.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::compile;

/// Files, entities and modules referenced by a memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    /// File paths in order of first appearance, deduplicated.
    pub files: Vec<String>,
    /// Backtick identifiers and PascalCase names, deduplicated.
    pub entities: Vec<String>,
    /// Parent directory names of `files` (minus src/lib/app/tests).
    pub modules: Vec<String>,
}

/// A file path after start-of-text or a delimiter, then one of the known
/// extensions, then a closing delimiter or end of text. Group 1 is the path.
/// The original used a look-ahead for the closing delimiter; here it is
/// consumed, and [`file_paths`] resumes scanning at the end of group 1 so
/// the delimiter can open the next path, exactly as with a look-ahead.
static FILE_PATH: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r#"(?:^|[\s"'`(,])(/?\w[\w./-]*\.(?:py|rs|js|ts|tsx|go|md|toml|yaml|yml|json|sql|sh|css|html))"#,
        r#"(?:[\s"'`),.:;]|$)"#,
    ))
});

/// `` `name` `` or `` `name()` ``; group 1 is the name.
static BACKTICK_ENTITY: LazyLock<Regex> = LazyLock::new(|| compile(r"`(\w[\w.]*)(?:\(\))?`"));

/// PascalCase names of two or more capitalised words (`CogDatabase`).
static PASCAL_CASE: LazyLock<Regex> = LazyLock::new(|| compile(r"\b([A-Z][a-z]+(?:[A-Z][a-z]+)+)\b"));

/// Directory names that say nothing about the module.
const GENERIC_DIRS: [&str; 4] = ["src", "lib", "app", "tests"];

/// Source extensions that make a backtick name a file, not an entity.
const FILE_LIKE_SUFFIXES: [&str; 4] = [".py", ".js", ".rs", ".ts"];

/// Iterates the file paths mentioned in `text`, in order, with repeats.
fn file_paths(text: &str) -> impl Iterator<Item = &str> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let path = FILE_PATH.captures_at(text, at)?.get(1)?;
        at = path.end();
        Some(path.as_str())
    })
}

/// Whether `text` mentions at least one file path.
pub(crate) fn has_file_path(text: &str) -> bool {
    file_paths(text).next().is_some()
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// Extracts the files, entities and modules referenced by `text`.
pub fn extract_scope(text: &str) -> Scope {
    let mut scope = Scope::default();
    for path in file_paths(text) {
        push_unique(&mut scope.files, path);
    }

    for caps in BACKTICK_ENTITY.captures_iter(text) {
        let name = &caps[1];
        let file_like = FILE_LIKE_SUFFIXES.iter().any(|ext| name.ends_with(ext));
        if name.chars().count() >= 2 && !file_like {
            push_unique(&mut scope.entities, name);
        }
    }
    for caps in PASCAL_CASE.captures_iter(text) {
        push_unique(&mut scope.entities, &caps[1]);
    }

    for path in &scope.files {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.len() < 2 {
            continue;
        }
        let dir = parts[parts.len() - 2];
        let meaningless = dir.is_empty() || dir == "." || dir == "..";
        if !meaningless && !GENERIC_DIRS.contains(&dir) {
            push_unique(&mut scope.modules, dir);
        }
    }
    scope
}

/// Normalises file paths: trims them, makes paths under `project_root`
/// relative to it, strips leading `/`, drops blanks, deduplicates and sorts.
pub fn normalize_scope_files(files: &[String], project_root: Option<&str>) -> Vec<String> {
    let root = project_root.filter(|r| !r.is_empty()).map(|r| format!("{}/", r.trim_end_matches('/')));
    let mut normalized = BTreeSet::new();
    for file in files {
        let mut path = file.trim();
        if let Some(rest) = root.as_deref().and_then(|r| path.strip_prefix(r)) {
            path = rest;
        }
        let path = path.trim_start_matches('/');
        if !path.is_empty() {
            normalized.insert(path.to_string());
        }
    }
    normalized.into_iter().collect()
}
