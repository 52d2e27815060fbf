//! Robot outcome language: sentences that report a measured result
//! ("grasp succeeded at 12.5N", "推动任务最终距离0.032米") count as
//! `observation` instead of falling back to `code`.
//!
//! A text qualifies when it contains a number and either
//! * an outcome word (succeeded, failed, slipped, measured, 成功, 失败, 最终 …), or
//! * a quantity with a physical unit (12.5N, 4.2 Nm, 87%, 0.032米 …), unless
//!   the text is a directive or a decision ("Set grip force to 12N", "Must never
//!   exceed 15N", "使用10Hz", "We decided to lower the speed to 0.05 m/s",
//!   "决定把接近速度降到0.05米每秒"), which states a setting rather than a measurement.
//!
//! General notes without measurements therefore still fall back to `code`.

use std::sync::LazyLock;

use regex::Regex;

use super::compile;

/// Outcome and measurement words; paired with any number in the text.
static OUTCOME: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"(?i)\b(?:succeed(?:s|ed)?|success(?:es|ful|fully)?|fail(?:s|ed)?|failures?",
        r"|slip(?:s|ped|page)?|dropped|collided|collisions?|measured|reached",
        r"|converged|diverged|achieved|overshot|stalled|final)\b",
        r"|成功|失败|滑落|打滑|掉落|碰撞|测得|测量|最终|距离|达到|收敛|误差",
    ))
});

/// A number directly followed by a physical unit. Units are case-sensitive
/// (`N` is newton, `m` is metre); ASCII units must end a word.
static QUANTITY: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"\b[0-9]+(?:[.,][0-9]+)?\s?(?:",
        r"(?:kN|mN|N|Nm|N[·.]m|mm|cm|um|µm|m|m/s|mm/s|cm/s|m/s\^?2",
        r"|rad|rad/s|deg|deg/s|degrees?|Hz|kHz|kg)\b",
        r"|%|°|毫米|厘米|米|弧度|度|牛|公斤|千克)",
    ))
});

/// Directives: modal words, decisions and recommendations, or an imperative verb
/// opening a clause. A value in a decision ("we decided to lower the approach
/// speed to 0.05 m/s") is a setting chosen, not a measurement made.
static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"(?i)\b(?:must|should|never|always|avoid|don't|do\s+not)\b",
        r"|\b(?:decided?|decisions?|chos(?:e|en)|choose|recommend(?:s|ed|ations?)?|advised?|suggest(?:s|ed)?",
        r"|plan(?:s|ned)?\s+to|we\s+will|going\s+to)\b",
        r"|决定|决策|推荐|计划|打算|选择|采用",
        r"|(?:^|[:：;；,，.。!！?？]\s*)(?:set|use|keep|limit|cap|increase|decrease",
        r"|reduce|raise|lower|try|apply|configure|tune|adjust|make)\b",
        // Chinese has no spaces to find a clause start: verbs match anywhere.
        r"|设置|设为|设定|使用|保持|限制|调整|调到|改成|改为",
        r"|必须|禁止|不要|应该|应当|务必|建议",
    ))
});

/// Whether `text` reports a measured robot outcome (see the module docs).
pub fn reports_measured_outcome(text: &str) -> bool {
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    OUTCOME.is_match(text) || (QUANTITY.is_match(text) && !DIRECTIVE.is_match(text))
}
