//! Unit tests: the shared cases of the original implementation's suite
//! (driven as data) plus behaviour specific to this implementation.

use std::time::Instant;

use serde_json::{json, Value};

use super::category::matching_categories;
use super::context::build_context_json;
use super::tags::{dimension_prefix, is_valid_tag};
use super::*;

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/peer-suite-cases.json");

// ---------------------------------------------------------------- shared cases

fn cases(area: &str) -> Vec<Value> {
    let raw = std::fs::read_to_string(CASES).expect("read shared cases");
    let all: Vec<Value> = serde_json::from_str(&raw).expect("parse shared cases");
    all.into_iter().filter(|c| c["area"] == area).collect()
}

fn text_input<'a>(case: &'a Value, key: &str) -> &'a str {
    case["input"][key].as_str().unwrap_or("")
}

fn contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::Array(items), _) => items.contains(needle),
        (Value::String(s), Value::String(n)) => s.contains(n.as_str()),
        (Value::Object(map), Value::String(key)) => map.contains_key(key),
        _ => false,
    }
}

fn compare(mode: &str, actual: &Value, expected: &Value) -> Result<bool, String> {
    let number = |v: &Value| v.as_f64().ok_or_else(|| format!("{v} is not a number"));
    Ok(match mode {
        "eq" => actual == expected,
        "approx" => {
            let (a, e) = (number(actual)?, number(expected)?);
            (a - e).abs() <= 1e-6 * e.abs().max(1.0)
        }
        "ge" => number(actual)? >= number(expected)?,
        "contains" => contains(actual, expected),
        "not_contains" => !contains(actual, expected),
        "contains_all" => match expected {
            Value::Array(items) => items.iter().all(|item| contains(actual, item)),
            _ => return Err(format!("contains_all needs an array, got {expected}")),
        },
        other => return Err(format!("unknown compare mode `{other}`")),
    })
}

/// Runs every case of `area` through `eval` and reports all failures at once.
fn run_area(area: &str, eval: impl Fn(&Value) -> Value) {
    let cases = cases(area);
    assert!(!cases.is_empty(), "no shared cases for area `{area}`");
    let mut failures = Vec::new();
    for case in &cases {
        let actual = eval(case);
        let mode = case["compare"].as_str().unwrap_or("eq");
        let verdict = compare(mode, &actual, &case["expected"]);
        if verdict != Ok(true) {
            failures.push(format!(
                "  {}: input {} {mode} {} but got {actual}{}",
                case["id"].as_str().unwrap_or("?"),
                case["input"],
                case["expected"],
                verdict.err().map(|e| format!(" ({e})")).unwrap_or_default(),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} `{area}` cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn scope_json(scope: &Scope) -> Value {
    json!({
        "scope_files": scope.files,
        "scope_entities": scope.entities,
        "scope_modules": scope.modules,
    })
}

#[test]
fn shared_classify_category() {
    run_area("classify_category", |c| json!(classify_category(text_input(c, "text"))));
}

#[test]
fn shared_classify_tags() {
    run_area("classify_tags", |c| {
        let tags = classify_tags(text_input(c, "text"), c["input"]["context_json"].as_str());
        let function = c["function"].as_str().unwrap_or("");
        if function.starts_with("len(") {
            json!(tags.len())
        } else {
            json!(tags)
        }
    });
}

#[test]
fn shared_estimate_confidence() {
    run_area("estimate_confidence", |c| {
        let (text, context) = (text_input(c, "text"), text_input(c, "context"));
        json!(estimate_confidence(text, context))
    });
}

#[test]
fn shared_extract_scope() {
    run_area("extract_scope", |c| {
        let scope = scope_json(&extract_scope(text_input(c, "text")));
        // "extract_scope(text)['scope_files']" selects one field.
        let function = c["function"].as_str().unwrap_or("");
        match function.split_once("['").and_then(|(_, r)| r.split_once("']")) {
            Some((field, _)) => scope[field].clone(),
            None => scope,
        }
    });
}

#[test]
fn shared_normalize_scope_files() {
    run_area("normalize_scope_files", |c| {
        let input = &c["input"];
        let files: Vec<String> = serde_json::from_value(input["files"].clone()).unwrap();
        json!(normalize_scope_files(&files, input["project_root"].as_str()))
    });
}

#[test]
fn shared_build_context_json() {
    let build = |c: &Value| build_context_json(text_input(c, "context"));
    run_area("build_context_json", |c| Value::Object(build(c)));
}

#[test]
fn shared_normalize_tag() {
    run_area("tags", |c| json!(normalize_tag(text_input(c, "tag"))));
}

#[test]
fn shared_dimension_prefix() {
    run_area("tag_tree", |c| {
        // A non-string category (the original accepted `123`) is passed as
        // its JSON text, which is not a tag either.
        let category = &c["input"]["category"];
        let tag = category.as_str().map(String::from).unwrap_or_else(|| category.to_string());
        json!(dimension_prefix(&tag))
    });
}

// ------------------------------------------------------------ our behaviour

/// Checks a table of `category | text` lines against `classify_category`.
fn assert_categories(table: &str) {
    let wrong: Vec<String> = table
        .lines()
        .filter_map(|line| line.split_once(" | "))
        .map(|(want, text)| (want.trim(), text, classify_category(text)))
        .filter(|(want, _, got)| want != got)
        .map(|(want, text, got)| format!("  {text:?}: want {want}, got {got}"))
        .collect();
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
}

#[test]
fn english_triggers_match_whole_words_only() {
    assert_categories(
        "
        code   | Resetting the arm fixed it
        code   | use curl to fetch
        code   | the gripper is portable
        code   | see the report for details
        code   | unobserved joints stay idle
        config | changed the port to 6889
        config | Port 6889 for web UI
        config | port=8080 on the lab PC
        config | 配置port 8080
        config | the base URL moved",
    );
    for text in ["Resetting the arm fixed it", "use curl to fetch"] {
        assert!(!matching_categories(text).any(|c| c == "config"), "{text}");
    }
}

#[test]
fn robot_outcomes_are_observations() {
    assert_categories(
        "
        observation | grasp succeeded at 12.5N
        observation | 推动任务最终距离0.032米
        observation | failed: slipped at 9.1N
        observation | pick-and-place success rate 87% over 40 trials
        observation | measured joint 3 torque 4.2Nm
        observation | 抓取成功率 87%
        observation | end effector drift of 33 mm/s
        observation | converged after 200 episodes",
    );
}

/// Issue 11: a value in a decision or a recommendation is a setting, not a
/// measurement, so it gets no `observation` tag (before: it did).
#[test]
fn decisions_and_recommendations_with_values_are_not_observations() {
    for (text, category) in [
        ("We decided to lower the approach speed to 0.05 m/s", "decision"),
        ("Recommended to keep the approach speed below 0.05 m/s", "preference"),
        ("决定把接近速度降到0.05米每秒", "decision"),
        ("We chose a grip force of 12N for paper cups", "decision"),
    ] {
        assert_eq!(classify_category(text), category, "{text}");
        let tags = classify_tags(text, None);
        assert!(!tags.iter().any(|t| t == "observation"), "{text}: {tags:?}");
    }
    // An outcome word still reports a measurement, whatever else the text says.
    assert!(classify_tags("We decided to slow down because the grasp failed at 0.1 m/s", None)
        .contains(&"observation".to_string()));
}

#[test]
fn notes_without_measurements_stay_code() {
    assert_categories(
        "
        code | grasp succeeded
        code | Use a wider gripper for mugs
        code | Set grip force to 12N for paper cups
        code | 夹爪使用10N的力
        code | python 3 syntax notes
        code | hello world",
    );
}

#[test]
fn priority_order_is_unchanged() {
    assert_categories(
        "
        constraint        | Must never exceed 15N grip force
        root_cause        | Failure caused by sensor drift
        observation_debug | Found that grasp failed at 12N",
    );
}

#[test]
fn spec_examples_classify_as_documented() {
    assert_categories(
        "
        constraint        | Must never exceed 15N grip force
        preference        | Prefer approach from left side
        worldview         | ONNX is faster than Ollama for small models
        tradeoff          | Speed vs accuracy: use 10Hz for real-time
        root_cause        | Failure caused by sensor drift
        decision          | Chose PID over MPC for simplicity
        revert            | Reverted to previous PID gains
        pattern           | Every time humidity > 80%, grip fails
        architecture      | Memory pipeline: learn → dedup → store
        config            | Port 6889 for web UI
        postmortem        | Lesson: always calibrate before new session
        gotcha            | Pitfall: joint limits not checked in sim
        self_defect       | AI overengineering tendency on simple tasks
        observation_debug | Found that timeout errors spike at noon
        observation_code  | Noticed search.py returns stale results
        observation       | Found that red cups require more force
        code              | General technical notes",
    );
    let text = "grip_force=12.5N works best because sensor was calibrated";
    assert_eq!(classify_tags(text, None), ["root_cause", "observation"]);
}

#[test]
fn protected_categories() {
    for category in CATEGORIES {
        let expected = matches!(category, "constraint" | "postmortem" | "gotcha");
        assert_eq!(is_protected(category), expected, "{category}");
    }
    assert!(!is_protected("unknown"));
}

#[test]
fn every_category_is_a_valid_tag_and_the_tree_is_consistent() {
    for category in CATEGORIES {
        assert!(is_valid_tag(category), "{category} missing from TAG_TREE");
    }
    let roots = TAG_TREE.iter().filter(|(_, parent, _)| parent.is_none()).count();
    assert_eq!(roots, 9);
    for (i, (tag, parent, _)) in TAG_TREE.iter().enumerate() {
        let duplicate = TAG_TREE[..i].iter().any(|(t, _, _)| t == tag);
        assert!(!duplicate, "duplicate {tag}");
        assert_eq!(normalize_tag(tag), *tag, "tag {tag} is not normalised");
        if let Some(parent) = parent {
            assert!(is_valid_tag(parent), "{tag} has unknown parent {parent}");
        }
    }
    assert_eq!(dimension_prefix("gotcha"), "[经验/踩坑]");
    assert_eq!(dimension_prefix("architecture"), "[能力/架构设计]");
    assert_eq!(dimension_prefix("self_defect"), "[AI缺陷]");
}

#[test]
fn normalize_tag_handles_mixed_input() {
    assert_eq!(normalize_tag("Pick-and-Place"), "pick_and_place");
    assert_eq!(normalize_tag(" _Robot  Arm_ "), "robot_arm");
    assert_eq!(normalize_tag("Robot 抓取"), "robot_抓取");
    assert_eq!(normalize_tag("   "), "");
}

#[test]
fn classify_tags_collects_all_matches_and_scenario_tags() {
    let tags = classify_tags("教训：因为没有权衡利弊就决定了", None);
    assert_eq!(tags, ["tradeoff", "decision", "postmortem"]);
    let ctx = r#"{"scenario_tags": ["debug", "pattern", "debug", 7, "nope"]}"#;
    assert_eq!(classify_tags("every time", Some(ctx)), ["pattern", "debug"]);
    let ctx = r#"{"scenario_tags": "debug"}"#;
    assert_eq!(classify_tags("plain", Some(ctx)), ["code"]);
    assert_eq!(classify_tags("plain", Some("")), ["code"]);
}

#[test]
fn confidence_is_rounded_and_capped() {
    let rich = r#"{"robot": "arm1", "task": "pick"}"#;
    let padded = "                 short                ";
    let cases = [
        ("plain", "", 0.80),
        ("failed because of drift", "", 0.85),
        ("因为漂移", "", 0.85),
        ("call `embed_one()` because", "", 0.90),
        ("src/a.py: `f()` failed because", "", 0.95),
        ("src/a.py: `f()` failed because", rich, 0.95),
        ("x", padded, 0.80),
    ];
    for (text, context, want) in cases {
        assert_eq!(estimate_confidence(text, context), want, "{text:?} {context:?}");
    }
}

#[test]
fn scope_extraction() {
    let scope = extract_scope("`embed_one()` in src/robotmem/ops/search.py calls CogDatabase; see `a.py`, CogDatabase");
    // `a.py` is a file (a backtick may delimit a path), not an entity.
    assert_eq!(scope.files, ["src/robotmem/ops/search.py", "a.py"]);
    assert_eq!(scope.entities, ["embed_one", "CogDatabase"]);
    assert_eq!(scope.modules, ["ops"]);
    // The closing delimiter of one path can open the next one.
    let scope = extract_scope("a.py b.rs,c/d.tsx foo.pyc x.py.bak");
    assert_eq!(scope.files, ["a.py", "b.rs", "c/d.tsx", "x.py"]);
    assert_eq!(scope.modules, ["c"]);
    assert!(extract_scope("./run.py and app/main.py").modules.is_empty());
    assert_eq!(extract_scope("发现CogDatabase类").entities, ["CogDatabase"]);
}

#[test]
fn normalize_scope_files_relativises_and_sorts() {
    let files: Vec<String> = ["/proj/src/b.py", "src/b.py", "/etc/x.yaml", " a.py ", ""].map(String::from).to_vec();
    assert_eq!(normalize_scope_files(&files, Some("/proj/")), ["a.py", "etc/x.yaml", "src/b.py"]);
    assert!(normalize_scope_files(&[], Some("/proj")).is_empty());
}

#[test]
fn context_json_with_source() {
    let build = |ctx| Value::Object(build_context_json_with_source(ctx, "save_perception"));
    let want = json!({"source": "save_perception", "task": {"success": true}});
    assert_eq!(build(r#"{"task": {"success": true}}"#), want);
    let want = json!({"source": "save_perception", "user_context": "42"});
    assert_eq!(build("42"), want);
}

#[test]
fn classify_runs_the_whole_pipeline() {
    let got =
        classify("grasp succeeded at 12.5N with `close_gripper()`", r#"{"robot": "UR5e", "scenario_tags": ["debug"]}"#);
    assert_eq!(got.category, "observation");
    assert_eq!(got.confidence, 0.90);
    assert_eq!(got.tags, ["observation", "debug"]);
    assert_eq!(got.scope.entities, ["close_gripper"]);
    assert!(got.scope.files.is_empty() && got.scope.modules.is_empty());
}

/// Micro-benchmark; run with
/// `cargo test --release classify_bench -- --ignored --nocapture`.
#[test]
#[ignore]
fn classify_bench() {
    let texts = [
        "grip_force=12.5N works best because sensor was calibrated",
        "Found that timeout errors spike at noon in src/robotmem/search.py",
        "推动任务最终距离0.032米，抓取成功率 87%",
        "General technical notes about the `CogDatabase` class and its pipeline setup",
    ];
    let context = r#"{"robot": "UR5e", "task": {"success": true}, "scenario_tags": ["debug"]}"#;
    let start = Instant::now();
    for text in texts {
        classify(text, context); // compiles the regexes: kept out of the timing
    }
    println!("first calls (regex compilation): {:?}", start.elapsed());
    let rounds = 20_000;
    let start = Instant::now();
    for i in 0..rounds {
        std::hint::black_box(classify(texts[i % texts.len()], context));
    }
    let per_call = start.elapsed() / rounds as u32;
    println!("classify(): {per_call:?} per call over {rounds} calls");
}
