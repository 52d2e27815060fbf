//! Category rules: one regex per category, checked in strict priority order.
//!
//! `classify_category` returns the first match (single label);
//! `matching_categories` yields every match (used for multi-label tags).
//! English triggers are whole words (`\b` is an ASCII word boundary, see
//! [`super::compile`]) and list their inflections explicitly; Chinese
//! triggers are plain substrings.

use std::sync::LazyLock;

use regex::Regex;

use super::{compile, robot};

/// All categories, highest priority first; `code` is the fallback.
pub const CATEGORIES: [&str; 17] = [
    "constraint",
    "preference",
    "worldview",
    "tradeoff",
    "root_cause",
    "decision",
    "revert",
    "pattern",
    "architecture",
    "config",
    "postmortem",
    "gotcha",
    "self_defect",
    "observation_debug",
    "observation_code",
    "observation",
    "code",
];

/// Categories that are never consolidated and never time-decayed.
pub const PROTECTED: [&str; 3] = ["constraint", "postmortem", "gotcha"];

/// Category returned when no rule matches (the last, lowest-priority one).
pub(crate) const FALLBACK: &str = CATEGORIES[CATEGORIES.len() - 1];

/// Discovery verbs shared by the observation sub-categories.
macro_rules! discovery_verbs {
    () => {
        r"(?:\bfound\s+that\b|\bobserved\b|\bnoticed\b|\bdiscovered\b|发现|观察到|注意到)"
    };
}

/// A rule: category, pattern, and an optional extra predicate that also
/// counts as a match (robot outcome language for `observation`).
type RuleSpec = (&'static str, &'static str, Option<fn(&str) -> bool>);

/// Rules in priority order (every category of [`CATEGORIES`] but `code`).
const RULES: [RuleSpec; 16] = [
    (
        "constraint",
        concat!(
            r"(?i)\bmust\s+(?:always|never|not)\b|^(?:always|never)\s+\w+|\bforbidden\b",
            r"|必须|禁止|不[允准许]许|强制|不可|绝不|一定要",
        ),
        None,
    ),
    (
        "preference",
        concat!(
            r"(?i)\bprefer(?:s|red)?\s+\w+.*?\s+(?:over|instead\s+of|rather\s+than)\s+\w+",
            r"|\bprefer(?:s|red)?\s+(?:using|to\s+use|to\s+\w+)\s+\w+",
            r"|(?:^|[.;:!?。；：！？]\s*)prefer\s+\w+",
            r"|\bpreference\s+for\s+\w+",
            r"|\bpreferred\s+(?:approach|method|way)\s+",
            r"|\brecommended\s+to\s+(?:use|keep|avoid)\s+\w+",
            r"|(?:优先|偏好)\s*(?:用|使用|选择|考虑)\s*\S+",
            r"|(?:推荐|建议)使用\s*\S+",
            r"|倾向于\s*(?:用|使用)\s*\S+",
        ),
        None,
    ),
    (
        "worldview",
        concat!(
            r"(?i)\w+\s+is\s+(?:better|worse|superior|inferior)\s+(?:than|to)\s+\w+",
            r"|\w+\s+is\s+(?:faster|slower|safer|cheaper|(?:more|less)\s+\w+)\s+than\s+\w+",
            r"|\bthe\s+(?:right|best|proper|correct|ideal)\s+(?:ways?|approach(?:es)?|practices?)\b",
            r"|\bI\s+(?:usually|always|generally|typically|normally)\s+\w+",
            r"|\b(?:from\s+now\s+on|going\s+forward|in\s+the\s+future)\b",
            r"|\w+\s*(?:比|>|优于)\s*\w+\s*(?:好|强|快|稳)",
            r"|(?:更好的|最[佳好]的?)\s*(?:做法|方式|实践|方案)",
            r"|(?:我一般|我习惯|以后都|今后都)\s*\S+",
        ),
        None,
    ),
    (
        "tradeoff",
        concat!(
            r"(?i)\btrade-?offs?\b|\bpros?\s+and\s+cons?\b|\b(?:dis)?advantages?\b",
            r"|\bvs\.?\b|\bversus\b",
            // `(?:^|[^不])但` stands in for Python's `(?<![不])但` (no look-behind).
            r"|权衡|优缺点|然而|不过|(?:^|[^不])但(?:是|却)|对比|相比",
        ),
        None,
    ),
    (
        "root_cause",
        concat!(
            r"(?i)\broot\s*causes?\b|\bcaused?\s*by\b|\bbecause\b|\bthe\s+issue\s+was\b",
            r"|原因|根因|导致|问题出在|之所以|是因为|由于",
        ),
        None,
    ),
    (
        "decision",
        concat!(
            r"(?i)\bchos(?:e|en)\b|\bdecided\b|\binstead\s+of\b|\brather\s+than\b|\bwe\s+should\b",
            r"|选择|决定|决策|采用|改[为用]|不[用再]",
        ),
        None,
    ),
    (
        "revert",
        concat!(r"(?i)\brevert(?:s|ed|ing)?\b|\brollbacks?\b|\broll(?:ed)?[\s-]back\b|\bundo(?:ne)?\b", r"|回滚|撤销",),
        None,
    ),
    (
        "pattern",
        concat!(
            r"(?i)\bpatterns?\b|\bevery\s+time\b|\bwhenever\b|\brecurring\b",
            r"|\bcommon\s+(?:issue|problem|pattern)s?\b",
            r"|规律|总是|反复出现",
        ),
        None,
    ),
    (
        "architecture",
        concat!(
            r"(?i)\barchitectur(?:e|es|al)\b|\bmodules?\b|\bpipelines?\b|\bsystem\s+design\b",
            r"|\bdepends\s+on\b",
            r"|架构|模块|系统设计|依赖|层[级次]|分层",
        ),
        None,
    ),
    (
        "config",
        concat!(
            r"(?i)\bconfig(?:s|ure|ured|uring|uration|urations)?\b|\bsettings?\b",
            r"|\benv(?:ironment)?[\s_-]*var(?:iable)?s?\b",
            r"|\benvironment\s+(?:setup|config(?:uration)?|settings?)\b",
            // "port 8080", "port=8080", "changed the port to 6889"
            r"|\bports?\b[\s:=#]*(?:(?:to|is|at|on|of|number|from)\b[\s:=#]*){0,2}[0-9]",
            r"|\burls?\b|\bversions?\s*v?[0-9]",
            r"|配置|环境变量|设置|版本",
        ),
        None,
    ),
    (
        "postmortem",
        concat!(
            r"(?i)\bpost-?mortems?\b|\blessons?\s+learn(?:ed|t|ing)?\b|\blessons?\s*[:：]",
            r"|教训|复盘|事后分析|事后复盘|回顾总结",
        ),
        None,
    ),
    (
        "gotcha",
        concat!(r"(?i)\bgotchas?\b|\bpitfalls?\b|\btraps?\s*[:：]", r"|踩坑|陷阱|坑[：:]|掉坑|踩了|踩过",),
        None,
    ),
    (
        "self_defect",
        concat!(
            r"(?i)\bself.defects?\b|\bAI.?缺陷",
            r"|\bAI\s+(?:defects?|overengineering|over-engineering|hallucinations?|sycophancy)\b",
            r"|训练偏[好向]|幻觉倾向|注意力衰减|讨好倾向|过度设计倾向|生成惯性|自回归偏[好向]",
        ),
        None,
    ),
    (
        "observation_debug",
        concat!(
            "(?i)",
            discovery_verbs!(),
            r".*(?:\berrors?\b|\bbugs?\b|\bcrash(?:es|ed|ing)?\b|\bfail(?:s|ed|ing|ures?)?\b",
            r"|\btime-?outs?\b|\btimed\s+out\b|\bexceptions?\b|\bleak(?:s|ed|ing|age)?\b",
            r"|报错|崩溃|异常|超时|泄漏)",
        ),
        None,
    ),
    (
        "observation_code",
        concat!(
            "(?i)",
            discovery_verbs!(),
            r".*(?:\.(?:py|rs|js|ts|go|md)\b|`\w+(?:\(\))?`|\bfunctions?\b|\bmodules?\b",
            r"|函数|模块|类|文件)",
        ),
        None,
    ),
    (
        "observation",
        concat!(
            r"(?i)\bfound\s+that\b|\b(?:observed|noticed|discovered)\b|\breveals?\s+that\b",
            r"|\b(?:it\s+)?turns?\s+out\b|\binvestigation\s+show(?:s|ed)?\b",
            r"|发现[了到]?|观察到|注意到|实际上[是为]",
            r"|实测|数据显示|测试(?:表明|显示)|确认[了到]|验证[了到]",
        ),
        Some(robot::reports_measured_outcome),
    ),
];

struct Rule {
    category: &'static str,
    regex: Regex,
    extra: Option<fn(&str) -> bool>,
}

impl Rule {
    fn matches(&self, text: &str) -> bool {
        self.regex.is_match(text) || self.extra.is_some_and(|f| f(text))
    }
}

static COMPILED: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    debug_assert!(
        RULES.iter().map(|r| r.0).eq(CATEGORIES[..RULES.len()].iter().copied()),
        "RULES must follow the CATEGORIES priority order"
    );
    RULES.iter().map(|&(category, pattern, extra)| Rule { category, regex: compile(pattern), extra }).collect()
});

/// Every category whose rule matches `text`, in priority order, without
/// the `code` fallback (the iterator is empty when nothing matches).
pub fn matching_categories(text: &str) -> impl Iterator<Item = &'static str> + '_ {
    COMPILED.iter().filter(move |rule| rule.matches(text)).map(|rule| rule.category)
}

/// Single-label classification: the first matching category in priority
/// order, `"code"` when no rule matches.
pub fn classify_category(text: &str) -> &'static str {
    matching_categories(text).next().unwrap_or(FALLBACK)
}

/// Whether memories of this category are exempt from consolidation and decay.
pub fn is_protected(category: &str) -> bool {
    PROTECTED.contains(&category)
}
