//! The panic boundary of the C ABI, checked on the sources: the body of every
//! exported `extern "C"` function in src/ffi/ is exactly one call of `guard`,
//! `guard_with` or `guard_void` (src/ffi/guard.rs), so no panic can unwind into
//! C. The functions found are cross-checked with the prototypes of
//! include/robotmem.h, so a function the scan missed fails the test too. Also:
//! the ffi files import each other without a cycle, and each stays under 600
//! lines. (What the guards do with a panic is tested by the unit tests of
//! src/ffi/guard.rs; a panic cannot be provoked through the public API.)

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CStr;
use std::path::PathBuf;

use robotmem::ffi::*;

const GUARDS: [&str; 3] = ["guard", "guard_with", "guard_void"];

fn ffi_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/ffi")
}

/// (file stem, source) of every .rs file of src/ffi, sorted.
fn sources() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(ffi_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    v.sort();
    assert!(v.len() >= 5, "src/ffi has only {} files: the check no longer reads it", v.len());
    v
}

/// The source with comments blanked and the brackets inside string and char
/// literals blanked (same length, same lines), so that brackets can be matched
/// and nothing in a comment is taken for code.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let debracket = |ch: char| if "(){}[]".contains(ch) { ' ' } else { ch };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && !ident_char(c.get(i.wrapping_sub(1))) {
            // Raw string r"…" / r#"…"#.
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            out.extend(&c[i..=j]);
            i = j + 1;
            while i < c.len() && !c[i..].iter().take(close.len()).copied().eq(close.chars()) {
                out.push(debracket(c[i]));
                i += 1;
            }
            out.push_str(&close);
            i += close.len();
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(debracket(c[i]));
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let end = if next == Some('\\') {
                c[i + 2..].iter().position(|&x| x == '\'').map(|p| i + 2 + p)
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    out.push('\'');
                    out.extend(c[i + 1..e].iter().map(|&x| debracket(x)));
                    out.push('\'');
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Index of the bracket closing the one at `open`.
fn matching(code: &[u8], open: usize) -> usize {
    let (o, c) = (code[open], if code[open] == b'(' { b')' } else { b'}' });
    let mut depth = 0;
    for (i, &b) in code.iter().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth -= 1;
            if depth == 0 {
                return i;
            }
        }
    }
    panic!("unbalanced bracket at byte {open}");
}

struct Exported {
    file: String,
    name: String,
    body: String,
    attrs: String,
}

/// Every `extern "C" fn` of src/ffi with its body and the text before it
/// (back to the previous item).
fn exported() -> Vec<Exported> {
    let mut found = Vec::new();
    for (file, src) in sources() {
        let code = code_only(&src);
        let bytes = code.as_bytes();
        let mut from = 0;
        while let Some(at) = code[from..].find("extern \"C\"").map(|p| p + from) {
            let rest = &code[at + "extern \"C\"".len()..];
            let rest_trim = rest.trim_start();
            if rest_trim.starts_with("fn(") {
                // A function pointer type (rm_open_options.clock), not a function.
                from = at + 1;
                continue;
            }
            assert!(
                rest_trim.starts_with("fn "),
                "{file}.rs: `extern \"C\"` not followed by a function: {rest_trim:.40}"
            );
            let name: String =
                rest_trim[3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let name_at = at + code[at..].find(&name).unwrap();
            let params = name_at + code[name_at..].find('(').unwrap();
            let open = matching(bytes, params) + code[matching(bytes, params)..].find('{').unwrap();
            let close = matching(bytes, open);
            let item_start = code[..at].rfind(['}', ';']).map_or(0, |p| p + 1);
            found.push(Exported {
                file: file.clone(),
                name,
                body: code[open + 1..close].trim().to_string(),
                attrs: code[item_start..at].to_string(),
            });
            from = close;
        }
    }
    found
}

/// The guard a body consists of, if it is exactly one call of one.
fn sole_guard_call(body: &str) -> Option<&'static str> {
    let guard = GUARDS.into_iter().find(|g| body.strip_prefix(g).is_some_and(|r| r.starts_with('(')))?;
    let open = guard.len();
    let close = matching(body.as_bytes(), open);
    matches!(body[close + 1..].trim(), "" | ";").then_some(guard)
}

fn header_functions() -> BTreeSet<String> {
    let header = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/robotmem.h")).unwrap();
    header
        .lines()
        .filter(|l| !l.starts_with("//") && !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with(" *"))
        .filter_map(|l| {
            let head = l.split_once('(')?.0;
            let name = head.rsplit([' ', '*']).next()?;
            name.starts_with("rm_").then(|| name.to_string())
        })
        .collect()
}

#[test]
fn every_exported_function_runs_inside_the_guard() {
    let fns = exported();
    let mut unguarded = Vec::new();
    for f in &fns {
        assert!(f.attrs.contains("#[no_mangle]"), "{}.rs: {} is extern \"C\" but not #[no_mangle]", f.file, f.name);
        assert!(f.attrs.contains("pub "), "{}.rs: {} is extern \"C\" but not pub", f.file, f.name);
        if sole_guard_call(&f.body).is_none() {
            unguarded.push(format!("{}.rs: {}", f.file, f.name));
        }
    }
    assert!(unguarded.is_empty(), "exported functions whose body is not one guard call:\n{}", unguarded.join("\n"));

    // The scan saw every function of the header, and nothing else is exported.
    let seen: BTreeSet<String> = fns.iter().map(|f| f.name.clone()).collect();
    assert_eq!(seen.len(), fns.len(), "a function is defined twice");
    let header = header_functions();
    assert!(header.len() > 40, "only {} prototypes read from the header", header.len());
    assert_eq!(seen, header, "the functions found in src/ffi and the header's prototypes differ");
    let mangles: usize = sources().iter().map(|(_, s)| code_only(s).matches("#[no_mangle]").count()).sum();
    assert_eq!(mangles, fns.len(), "a #[no_mangle] item that is not an extern \"C\" function");
}

#[test]
fn the_guards_are_the_ones_of_guard_rs() {
    // A local function of the same name would pass the structural check unguarded.
    for (file, src) in sources() {
        let code = code_only(&src);
        for g in GUARDS {
            let defined = code.contains(&format!("fn {g}(")) || code.contains(&format!("fn {g}<"));
            assert_eq!(defined, file == "guard", "{file}.rs: fn {g} must be defined in guard.rs only");
        }
        if file != "guard" && code.contains("extern \"C\"") {
            assert!(code.contains("use super::guard::{"), "{file}.rs exports functions but does not import the guards");
        }
    }
}

#[test]
fn the_check_catches_an_unguarded_body() {
    assert_eq!(sole_guard_call("guard(|| Ok(()))"), Some("guard"));
    assert_eq!(sole_guard_call("guard_void(|| X::free(r))"), Some("guard_void"));
    assert_eq!(sole_guard_call("guard_with(p, || { f(\"a\") })"), Some("guard_with"));
    assert_eq!(sole_guard_call("X::free(r)"), None);
    assert_eq!(sole_guard_call("let s = f(); guard(|| Ok(()))"), None, "work before the guard");
    assert_eq!(sole_guard_call("guard(|| Ok(())); f()"), None, "work after the guard");
    assert_eq!(sole_guard_call("guardian(|| Ok(()))"), None);
    let src = "// pub extern \"C\" fn commented(\n#[no_mangle]\npub extern \"C\" fn f(s: &str) -> i32 {\n    \
               if s == \"{\" { g('}') } else { 0 }\n}\n";
    let code = code_only(src);
    assert!(!code.contains("commented"));
    assert_eq!(code.len(), src.len());
    let open = code.find('{').unwrap();
    assert_eq!(matching(code.as_bytes(), open), code.rfind('}').unwrap(), "brackets in literals are not code");
}

#[test]
fn ffi_files_import_each_other_without_a_cycle_and_stay_small() {
    let files = sources();
    let names: BTreeSet<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    let mut uses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, src) in &files {
        let lines = src.lines().count();
        assert!(lines < 600, "src/ffi/{file}.rs has {lines} lines (at most 599)");
        if file == "mod" {
            continue; // declares and re-exports the others
        }
        let code = code_only(src);
        let deps = uses.entry(file.as_str()).or_default();
        for prefix in ["super::", "crate::ffi::"] {
            for (at, _) in code.match_indices(prefix) {
                let m: String =
                    code[at + prefix.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if let Some(&n) = names.get(m.as_str()) {
                    if n != file {
                        deps.insert(n);
                    }
                }
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit<'a>(
        n: &'a str,
        uses: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if let Some(i) = path.iter().position(|&p| p == n) {
            panic!("import cycle in src/ffi: {} -> {n}", path[i..].join(" -> "));
        }
        if !done.insert(n) {
            return;
        }
        path.push(n);
        for &d in uses.get(n).into_iter().flatten() {
            visit(d, uses, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for &n in uses.keys() {
        visit(n, &uses, &mut Vec::new(), &mut done);
    }
    assert!(uses["memory"].contains("arena"), "the import scan finds nothing: {uses:?}");
}

fn last_error() -> String {
    // SAFETY: rm_last_error never returns NULL; the string lives until the next call.
    unsafe { CStr::from_ptr(rm_last_error()) }.to_str().unwrap().to_string()
}

#[test]
fn the_functions_without_a_status_leave_the_last_error_alone() {
    // A failure, then the calls a C program makes before reading its message.
    let mut out = std::ptr::null_mut();
    assert_eq!(rm_get_memory(std::ptr::null_mut(), 1, &mut out), rm_status::RM_INVALID_ARGUMENT);
    assert_eq!(last_error(), "db is NULL");
    unsafe {
        rm_memory_result_free(std::ptr::null_mut());
        rm_learn_result_free(std::ptr::null_mut());
        rm_recall_result_free(std::ptr::null_mut());
        rm_perception_result_free(std::ptr::null_mut());
        rm_forget_result_free(std::ptr::null_mut());
        rm_update_result_free(std::ptr::null_mut());
        rm_session_free(std::ptr::null_mut());
        rm_session_summary_free(std::ptr::null_mut());
        rm_embedding_info_free(std::ptr::null_mut());
        rm_learn_batch_result_free(std::ptr::null_mut());
        rm_string_free(std::ptr::null_mut());
    }
    assert!(!rm_version().is_null());
    assert_eq!(unsafe { CStr::from_ptr(rm_status_str(14)) }.to_str().unwrap(), "RM_PANIC");
    assert_eq!(unsafe { CStr::from_ptr(rm_status_str(99)) }.to_str().unwrap(), "RM_UNKNOWN");
    assert_eq!(last_error(), "db is NULL", "a free, rm_version or rm_status_str cleared the message");
    // rm_close(NULL) returns a status: RM_OK, which clears it.
    assert_eq!(rm_close(std::ptr::null_mut()), rm_status::RM_OK);
    assert_eq!(last_error(), "");
}
