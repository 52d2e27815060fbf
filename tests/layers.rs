//! Layers call down only: the top-level modules of `src/` (`store`, `search`,
//! `dedup`, `db`, …) must not import each other in a loop (issue 27).
//!
//! The test reads every `src/**/*.rs`, takes each `crate::<name>` path (also
//! inside `use crate::{a, b::c}` groups; names the crate root re-exports, such
//! as `crate::Db`, count for the module they come from), leaves out comments and
//! `#[cfg(test)]` items, builds the graph "top-level module → top-level module"
//! and fails on a cycle, printing it with the files that make each edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module → modules it imports → files that import them.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules: `src/<name>.rs` and `src/<name>/` (not the crate root).
fn top_modules() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(src()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() || (p.extension().is_some_and(|x| x == "rs") && name != "lib") {
            out.insert(name);
        }
    }
    out
}

/// The text without `//` comments (doc links are not imports). String literals
/// holding `//` would be cut short too, which only ever hides text.
fn without_comments(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

/// The text without the items marked `#[cfg(test)]` (a `mod x;` declaration or a
/// braced item such as `mod tests { … }`).
fn without_tests(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MARK.len()..];
        let (brace, semi) = (after.find('{'), after.find(';'));
        match (brace, semi) {
            (_, Some(s)) if brace.is_none_or(|b| s < b) => rest = &after[s + 1..],
            (Some(b), _) => {
                let mut depth = 0usize;
                let mut end = after.len();
                for (i, c) in after[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            _ => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// The files declared `#[cfg(test)] mod x;` (test-only), relative to `src/`.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let text = without_comments(&std::fs::read_to_string(f).unwrap());
        let dir = match f.file_name().unwrap().to_str().unwrap() {
            "mod.rs" | "lib.rs" => f.parent().unwrap().to_path_buf(),
            _ => f.with_extension(""),
        };
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + "#[cfg(test)]".len()..];
            let decl = rest.trim_start();
            let decl = decl.strip_prefix("pub(crate) ").or_else(|| decl.strip_prefix("pub ")).unwrap_or(decl);
            if let Some(d) = decl.strip_prefix("mod ") {
                let name: String = d.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if d[name.len()..].trim_start().starts_with(';') {
                    out.insert(dir.join(format!("{name}.rs")));
                    out.insert(dir.join(&name).join("mod.rs"));
                }
            }
        }
    }
    out
}

/// The first names of the paths after a `crate::`: `a` for `crate::a::b`, and
/// `a`, `b` for `crate::{a::x, b}`.
fn first_names(after: &str) -> Vec<String> {
    let ident = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let Some(group) = after.trim_start().strip_prefix('{') else { return vec![ident(after)] };
    let mut names = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    names
}

/// Names the crate root re-exports from a module (`pub use db::Db;`, `pub use
/// error::{Error, Result}`): name → module.
fn root_reexports() -> BTreeMap<String, String> {
    let lib = without_comments(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else { continue };
        let Some((module, items)) = path.split_once("::") else { continue };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.rsplit(" as ").next().unwrap().trim();
            if !name.is_empty() && name != "*" && !name.contains("::") {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

fn graph() -> Graph {
    let root = src();
    let tops = top_modules();
    let reexports = root_reexports();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let test_only = test_only_files(&files);
    let mut g = Graph::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        let from = rel.components().next().unwrap().as_os_str().to_string_lossy();
        let from = from.trim_end_matches(".rs").to_string();
        if from == "lib" || test_only.contains(f) {
            continue;
        }
        let text = without_tests(&without_comments(&std::fs::read_to_string(f).unwrap()));
        for (at, _) in text.match_indices("crate::") {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `$crate::`, `some_crate::`
            }
            for name in first_names(&text[at + "crate::".len()..]) {
                let to = if tops.contains(&name) { Some(name) } else { reexports.get(&name).cloned() };
                if let Some(to) = to.filter(|t| *t != from) {
                    let edge = g.entry(from.clone()).or_default().entry(to).or_default();
                    edge.insert(rel.display().to_string());
                }
            }
        }
    }
    g
}

/// A cycle of the graph, if it has one (depth-first search).
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(g: &Graph, m: &str, state: &mut BTreeMap<String, u8>, path: &mut Vec<String>) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for next in g.get(m).into_iter().flat_map(|e| e.keys()) {
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|p| p == next).unwrap();
                    let mut c = path[start..].to_vec();
                    c.push(next.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(g, next, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in g.keys() {
        if !state.contains_key(m.as_str()) {
            if let Some(c) = visit(g, m, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn top_level_modules_import_each_other_without_cycles() {
    let g = graph();
    for (from, to) in &g {
        println!("{from} -> {}", to.keys().cloned().collect::<Vec<_>>().join(", "));
    }
    if let Some(c) = cycle(&g) {
        let edges: Vec<String> =
            c.windows(2).map(|w| format!("  {} -> {}  ({})", w[0], w[1], fmt_files(&g[&w[0]][&w[1]]))).collect();
        panic!("import cycle between top-level modules: {}\n{}", c.join(" -> "), edges.join("\n"));
    }
}

fn fmt_files(files: &BTreeSet<String>) -> String {
    files.iter().cloned().collect::<Vec<_>>().join(", ")
}

#[test]
fn the_scanner_sees_what_it_must() {
    assert_eq!(first_names("store::memory::get(c)"), ["store"]);
    assert_eq!(first_names("{self, a::b, c::{d, e}, f}; x"), ["self", "a", "c", "f"]);
    let text =
        "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { {} }\n}\n// crate::c\nfn g() {}";
    let kept = without_tests(&without_comments(text));
    assert!(kept.contains("crate::a") && !kept.contains("crate::b") && !kept.contains("crate::c"), "{kept}");
    assert!(kept.contains("fn g()"));
    assert!(without_tests("#[cfg(test)]\nmod tests;\nuse crate::z;").contains("crate::z"));
    // The real source has edges (a scanner that finds nothing would pass vacuously).
    let g = graph();
    assert!(g.get("db").is_some_and(|e| e.contains_key("store") && e.contains_key("search")), "{g:?}");
    // A cycle is found.
    let mut looped = g.clone();
    looped.entry("store".into()).or_default().entry("db".into()).or_default().insert("made up".into());
    assert!(cycle(&looped).is_some());
}
