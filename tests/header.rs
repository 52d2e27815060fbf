//! The committed C header must be exactly what the pinned cbindgen generates from
//! the current sources. To refresh it: `scripts/regen-header`.

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/robotmem.h"));
const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include/robotmem.h");

#[test]
fn committed_header_matches_generated() {
    if std::env::var_os("RM_UPDATE_HEADER").is_some() {
        std::fs::write(COMMITTED, GENERATED).unwrap();
    }
    let committed = std::fs::read_to_string(COMMITTED).expect("include/robotmem.h is missing");
    if committed != GENERATED {
        let line = committed.lines().zip(GENERATED.lines()).position(|(a, b)| a != b);
        panic!(
            "include/robotmem.h differs from the header cbindgen generates (first difference at line {}). \
             Run scripts/regen-header and commit the result.",
            line.map_or_else(|| "end".to_string(), |l| (l + 1).to_string())
        );
    }
}

#[test]
fn version_macros_match_cargo() {
    let v = env!("CARGO_PKG_VERSION");
    assert!(GENERATED.contains(&format!("#define RM_VERSION_STRING \"{v}\"")));
    let mut parts = v.split('.');
    for name in ["MAJOR", "MINOR", "PATCH"] {
        let n = parts.next().unwrap();
        assert!(GENERATED.contains(&format!("#define RM_VERSION_{name} {n}\n")), "RM_VERSION_{name}");
    }
    let c = unsafe { std::ffi::CStr::from_ptr(robotmem::ffi::rm_version()) };
    assert_eq!(c.to_str().unwrap(), v);
}

#[test]
fn every_exported_function_is_documented() {
    // Every prototype in the header is preceded by a comment block.
    let lines: Vec<&str> = GENERATED.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("rm_status rm_") || l.starts_with("void rm_") || l.starts_with("const char *rm_") {
            assert!(lines[i - 1].starts_with("//"), "undocumented: {l}");
        }
    }
}

#[test]
fn every_name_in_the_header_has_the_rm_prefix() {
    // One prefix: macros RM_ (besides the include guard), types and functions rm_.
    let mut functions = 0;
    for l in GENERATED.lines() {
        if let Some(rest) = l.strip_prefix("#define ") {
            let name = rest.split_whitespace().next().unwrap_or("");
            assert!(name.starts_with("RM_") || name == "ROBOTMEM_H", "macro without the RM_ prefix: {l}");
        }
        for kw in ["typedef struct ", "typedef enum ", "enum ", "struct "] {
            if let Some(rest) = l.strip_prefix(kw) {
                let name = rest.split([' ', '{', ';']).next().unwrap_or("");
                assert!(name.starts_with("rm_"), "type without the rm_ prefix: {l}");
            }
        }
        if l.contains('(') && !l.starts_with("//") && !l.starts_with(' ') && !l.starts_with('#') {
            let name = l.split('(').next().unwrap_or("").rsplit([' ', '*']).next().unwrap_or("");
            assert!(name.starts_with("rm_"), "function without the rm_ prefix: {l}");
            functions += 1;
        }
    }
    assert!(functions > 40, "only {functions} prototypes seen: the check no longer reads the header");
}
