//! Tag vocabulary (the 9-dimension tag tree), tag normalisation, display
//! prefixes and multi-label tag classification.

use serde_json::Value;

use super::category;

/// The controlled tag vocabulary: `(tag, parent, display name)`, where a
/// `None` parent marks one of the 9 root dimensions. Same content as the
/// original `TAG_META_TREE`; the `tag_meta` table is synced from it.
pub const TAG_TREE: &[(&str, Option<&str>, &str)] = &[
    // Root dimensions.
    ("metacognition", None, "元认知"),
    ("capability", None, "能力"),
    ("domain", None, "领域"),
    ("technique", None, "技法"),
    ("timing", None, "时机"),
    ("boundary", None, "边界"),
    ("experience", None, "经验"),
    ("self_defect", None, "AI缺陷"),
    ("reflection", None, "反思"),
    // metacognition
    ("reasoning", Some("metacognition"), "推理"),
    ("cognitive_bias", Some("metacognition"), "认知偏差"),
    ("decision_framework", Some("metacognition"), "决策框架"),
    ("systems_thinking", Some("metacognition"), "系统思维"),
    ("risk_thinking", Some("metacognition"), "风险思维"),
    // capability
    ("build", Some("capability"), "构建"),
    ("debug", Some("capability"), "问题排查"),
    ("design", Some("capability"), "系统设计"),
    ("review", Some("capability"), "代码审查"),
    ("explain", Some("capability"), "解释说明"),
    ("optimize", Some("capability"), "性能优化"),
    ("plan", Some("capability"), "方案规划"),
    // domain
    ("cs_fundamentals", Some("domain"), "计算机基础"),
    ("ai_ml", Some("domain"), "AI/ML"),
    ("finance", Some("domain"), "金融"),
    ("business", Some("domain"), "商业"),
    ("cross_domain", Some("domain"), "跨领域"),
    // cs_fundamentals
    ("compiler_lang", Some("cs_fundamentals"), "编译/语言"),
    ("os", Some("cs_fundamentals"), "操作系统"),
    ("concurrency", Some("cs_fundamentals"), "并发"),
    ("database", Some("cs_fundamentals"), "数据库"),
    ("distributed", Some("cs_fundamentals"), "分布式"),
    ("network", Some("cs_fundamentals"), "网络"),
    ("algo_ds", Some("cs_fundamentals"), "算法/数据结构"),
    ("security", Some("cs_fundamentals"), "安全"),
    // finance
    ("crypto", Some("finance"), "加密货币"),
    ("traditional", Some("finance"), "传统金融"),
    ("behavioral_finance", Some("finance"), "行为金融"),
    // technique
    ("patterns", Some("technique"), "设计模式"),
    ("anti_patterns", Some("technique"), "反模式"),
    ("recipes", Some("technique"), "实用技巧"),
    ("language_specific", Some("technique"), "语言特性"),
    // timing
    ("when_to_start", Some("timing"), "何时开始"),
    ("when_to_stop", Some("timing"), "何时停止"),
    ("when_to_switch", Some("timing"), "何时切换"),
    // boundary
    ("tradeoff", Some("boundary"), "权衡"),
    ("not_applicable", Some("boundary"), "不适用"),
    ("diminishing_returns", Some("boundary"), "收益递减"),
    // experience
    ("war_story", Some("experience"), "实战故事"),
    ("postmortem", Some("experience"), "教训/复盘"),
    ("gotcha", Some("experience"), "踩坑"),
    // self_defect
    ("hallucination", Some("self_defect"), "幻觉"),
    ("sycophancy", Some("self_defect"), "讨好倾向"),
    ("overengineering", Some("self_defect"), "过度设计"),
    ("no_verification", Some("self_defect"), "缺少验证"),
    // reflection
    ("accuracy_calibration", Some("reflection"), "准确度校准"),
    ("behavior_rule", Some("reflection"), "行为规则"),
    ("blind_spot", Some("reflection"), "盲点"),
    // Category tags produced by auto-classification.
    ("constraint", Some("boundary"), "约束"),
    ("preference", Some("reflection"), "偏好"),
    ("worldview", Some("metacognition"), "世界观"),
    ("root_cause", Some("experience"), "根因"),
    ("decision", Some("metacognition"), "决策"),
    ("revert", Some("experience"), "回滚"),
    ("pattern", Some("technique"), "规律"),
    ("architecture", Some("capability"), "架构设计"),
    ("config", Some("domain"), "配置"),
    ("observation", Some("domain"), "观察发现"),
    ("observation_code", Some("domain"), "代码观察"),
    ("observation_debug", Some("domain"), "调试观察"),
    ("code", Some("capability"), "代码"),
];

fn node(tag: &str) -> Option<&'static (&'static str, Option<&'static str>, &'static str)> {
    TAG_TREE.iter().find(|(t, _, _)| *t == tag)
}

/// Whether `tag` belongs to the controlled vocabulary.
pub fn is_valid_tag(tag: &str) -> bool {
    node(tag).is_some()
}

/// Display prefix of a tag: `"[经验]"` for a root dimension,
/// `"[经验/踩坑]"` (parent/child display names) for any other tag,
/// `""` for an empty or unknown tag.
// The original's display of a tag; robotmem shows tags as they are. Kept to check
// the tag tree against the original's cases (src/classify/tests.rs).
#[cfg(test)]
pub fn dimension_prefix(tag: &str) -> String {
    let Some(&(_, parent, display)) = node(tag) else {
        return String::new();
    };
    match parent.and_then(node) {
        Some(&(_, _, parent_display)) => format!("[{parent_display}/{display}]"),
        None => format!("[{display}]"),
    }
}

/// Normalises a user tag: trims, lowercases ASCII letters, turns whitespace
/// and hyphens into `_`, collapses repeated `_` and strips them at both
/// ends. Other characters (CJK included) are kept as they are.
pub fn normalize_tag(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    for c in tag.trim().chars() {
        let c = if c.is_whitespace() || c == '-' { '_' } else { c.to_ascii_lowercase() };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.trim_matches('_').to_string()
}

/// Multi-label classification: every matching category in priority order,
/// then the valid `scenario_tags` of `context_json` (a JSON object; broken
/// JSON or any other value is ignored), deduplicated; `["code"]` if empty.
pub fn classify_tags(text: &str, context_json: Option<&str>) -> Vec<String> {
    let mut tags: Vec<String> = category::matching_categories(text).map(str::to_string).collect();

    let context = context_json.filter(|c| !c.trim().is_empty()).and_then(|c| serde_json::from_str::<Value>(c).ok());
    if let Some(Value::Array(scenario)) = context.as_ref().and_then(|c| c.get("scenario_tags")) {
        for tag in scenario.iter().filter_map(Value::as_str) {
            if is_valid_tag(tag) && !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_string());
            }
        }
    }

    if tags.is_empty() {
        tags.push(category::FALLBACK.to_string());
    }
    tags
}
