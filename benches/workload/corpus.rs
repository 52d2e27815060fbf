//! Deterministic synthetic robot corpus and recall queries.
//!
//! Everything is drawn from one small inline PRNG (SplitMix64) with a fixed
//! seed, so two runs (and the two durability databases of one run) learn the
//! exact same memories in the same order.

use serde_json::json;

/// SplitMix64: tiny, fast, good enough statistical quality for a workload.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
}

/// Default seed of the corpus and of the query mix.
pub const SEED: u64 = 0x0005_EED0_FB0B;

// (english, chinese) pairs so the Chinese memories talk about the same world.
const OBJECTS: &[(&str, &str)] = &[
    ("mug", "杯子"),
    ("cup", "杯子"),
    ("paper cup", "纸杯"),
    ("bottle", "瓶子"),
    ("box", "箱子"),
    ("can", "罐子"),
    ("bowl", "碗"),
    ("block", "积木"),
    ("sponge", "海绵"),
    ("screwdriver", "螺丝刀"),
    ("banana", "香蕉"),
    ("apple", "苹果"),
    ("plate", "盘子"),
    ("tray", "托盘"),
    ("bolt", "螺栓"),
    ("gear", "齿轮"),
    ("cable", "电缆"),
    ("book", "书"),
    ("marker", "记号笔"),
    ("tennis ball", "网球"),
];
const COLORS: &[(&str, &str)] = &[
    ("red", "红色"),
    ("blue", "蓝色"),
    ("green", "绿色"),
    ("yellow", "黄色"),
    ("black", "黑色"),
    ("white", "白色"),
    ("orange", "橙色"),
    ("grey", "灰色"),
    ("transparent", "透明"),
    ("purple", "紫色"),
];
const SURFACES: &[(&str, &str)] = &[
    ("wooden table", "木桌"),
    ("steel shelf", "钢架"),
    ("conveyor belt", "传送带"),
    ("carpet", "地毯"),
    ("rubber mat", "橡胶垫"),
    ("glass table", "玻璃桌"),
    ("cardboard", "纸板"),
    ("tile floor", "瓷砖地面"),
];
const PLACES: &[(&str, &str)] = &[
    ("charging dock", "充电桩"),
    ("kitchen", "厨房"),
    ("lab door", "实验室门口"),
    ("shelf B3", "B3货架"),
    ("loading bay", "装卸区"),
    ("elevator", "电梯"),
    ("corridor 2", "2号走廊"),
    ("workbench", "工作台"),
    ("assembly line", "装配线"),
    ("storage room", "储藏室"),
];
const ARMS: &[&str] = &["UR5e", "Franka Panda", "KUKA iiwa", "xArm7", "Kinova Gen3", "UR10e"];
const MOBILE: &[&str] = &["TurtleBot4", "Spot", "Stretch", "Fetch", "Husky"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Success,
    Failure,
    Slip,
}

impl Outcome {
    fn en(self) -> &'static str {
        match self {
            Outcome::Success => "succeeded",
            Outcome::Failure => "failed",
            Outcome::Slip => "slipped",
        }
    }
    fn zh(self) -> &'static str {
        match self {
            Outcome::Success => "成功",
            Outcome::Failure => "失败",
            Outcome::Slip => "滑落",
        }
    }
    fn word(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Slip => "slip",
        }
    }
}

/// One memory to learn.
pub struct Memory {
    pub insight: String,
    pub context: String,
    pub chinese: bool,
}

impl Memory {
    /// The learn request of this memory (insight + context).
    pub fn request(&self) -> robotmem::LearnRequest<'_> {
        robotmem::LearnRequest { insight: &self.insight, context: Some(&self.context), ..Default::default() }
    }
}

/// Infinite deterministic stream of memories.
pub struct Corpus {
    rng: Rng,
}

impl Corpus {
    pub fn new(seed: u64) -> Corpus {
        Corpus { rng: Rng::new(seed) }
    }

    pub fn next_memory(&mut self) -> Memory {
        let r = &mut self.rng;
        let chinese = r.chance(0.10);
        let task = match r.int(0, 99) {
            0..=44 => "grasp",
            45..=69 => "push",
            70..=89 => "navigate",
            _ => "place",
        };
        let outcome = match r.int(0, 99) {
            0..=64 => Outcome::Success,
            65..=84 => Outcome::Failure,
            _ => {
                if task == "grasp" || task == "place" {
                    Outcome::Slip
                } else {
                    Outcome::Failure
                }
            }
        };
        let (obj, obj_zh) = *r.pick(OBJECTS);
        let (color, color_zh) = *r.pick(COLORS);
        let (surface, surface_zh) = *r.pick(SURFACES);
        let robot = if task == "navigate" { *r.pick(MOBILE) } else { *r.pick(ARMS) };
        let force = (r.range(2.0, 40.0) * 10.0).round() / 10.0;
        let angle = r.int(0, 18) * 5;
        let speed = (r.range(0.02, 1.2) * 100.0).round() / 100.0;
        let width = r.int(10, 85);
        let pos = [
            (r.range(0.20, 0.80) * 1000.0).round() / 1000.0,
            (r.range(-0.40, 0.40) * 1000.0).round() / 1000.0,
            (r.range(0.00, 0.30) * 1000.0).round() / 1000.0,
        ];
        let dist = (r.range(0.001, 0.150) * 1000.0).round() / 1000.0;
        let secs = (r.range(4.0, 180.0) * 10.0).round() / 10.0;
        let replans = r.int(0, 6);
        let (from, from_zh) = *r.pick(PLACES);
        let (to, to_zh) = *r.pick(PLACES);
        let attempts = r.int(1, 5);
        let sim = r.chance(0.7);
        let variant = r.int(0, 3);
        let ok = outcome == Outcome::Success;

        let insight = if chinese {
            match task {
                "grasp" => match variant {
                    0 | 1 => format!("抓取{color_zh}{obj_zh}{}，夹持力{force}牛，接近角度{angle}度", outcome.zh()),
                    _ => format!("{robot}在{surface_zh}上抓取{obj_zh}{}，力{force}N，开口{width}毫米", outcome.zh()),
                },
                "push" => format!(
                    "推动任务最终距离{dist}米，推动{color_zh}{obj_zh}{}，速度{speed}米每秒，表面{surface_zh}",
                    outcome.zh()
                ),
                "navigate" => {
                    format!("导航到{to_zh}用时{secs}秒，{}，重新规划{replans}次，从{from_zh}出发", outcome.zh())
                }
                _ => format!("放置{obj_zh}到{surface_zh}{}，误差{dist}米，尝试{attempts}次", outcome.zh()),
            }
        } else {
            match task {
                "grasp" => match variant {
                    0 => format!("grasp of {color} {obj} {} at {force}N, approach {angle}deg", outcome.en()),
                    1 => format!(
                        "{robot} grasped the {color} {obj} on the {surface}: {}, grip force {force}N, \
                         approach angle {angle} deg, gripper width {width} mm",
                        outcome.word()
                    ),
                    2 if outcome == Outcome::Slip => format!(
                        "{color} {obj} slipped out of the gripper at {force}N on the {surface}; \
                         lift speed was {speed} m/s"
                    ),
                    _ => format!(
                        "{robot} {} grasping the {obj} ({color}) after {attempts} attempts, force {force}N, \
                         approach {angle}deg",
                        if ok { "succeeded" } else { "failed" }
                    ),
                },
                "push" => match variant {
                    0 | 1 => format!(
                        "push of {color} {obj} on {surface} at {speed} m/s: final distance {dist} m \
                         from target, {}",
                        outcome.word()
                    ),
                    _ => format!(
                        "{robot} pushed the {obj} across the {surface} at {speed} m/s, {} with final \
                         distance {dist} m",
                        outcome.en()
                    ),
                },
                "navigate" => match variant {
                    0 | 1 => {
                        format!("navigation to {to} {} in {secs}s at {speed} m/s with {replans} replans", outcome.en())
                    }
                    _ => format!(
                        "{robot} navigated from {from} to {to}: {}, {secs}s, min obstacle clearance {dist} m",
                        outcome.word()
                    ),
                },
                _ => format!(
                    "place {color} {obj} on {surface} {}, position error {dist} m after {attempts} attempts, \
                     release force {force}N",
                    outcome.en()
                ),
            }
        };

        let mut params = json!({
            "force": {"value": force, "unit": "N"},
            "speed": {"value": speed, "unit": "m/s"},
        });
        if task == "grasp" || task == "place" {
            params["approach_angle"] = json!({"value": angle, "unit": "deg"});
            params["gripper_width"] = json!({"value": width, "unit": "mm"});
        }
        if task == "push" || task == "place" {
            params["final_distance"] = json!({"value": dist, "unit": "m"});
        }
        if task == "navigate" {
            params["duration"] = json!({"value": secs, "unit": "s"});
            params["replans"] = json!(replans);
        }
        let context = json!({
            "params": params,
            "spatial": {"object_position": pos},
            "robot": {"type": robot},
            "task": {"name": task, "success": ok, "outcome": outcome.word(), "object": obj, "surface": surface},
            "env": {"sim_or_real": if sim { "sim" } else { "real" }},
        });
        Memory { insight, context: context.to_string(), chinese }
    }
}

/// Kind of a recall in the mix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Plain,
    Filter,
    Spatial,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Plain, Kind::Filter, Kind::Spatial];
    pub fn name(self) -> &'static str {
        match self {
            Kind::Plain => "plain",
            Kind::Filter => "filter",
            Kind::Spatial => "spatial",
        }
    }
}

pub struct Query {
    pub kind: Kind,
    pub text: &'static str,
    pub filter: Option<String>,
    pub spatial: Option<String>,
    pub chinese: bool,
}

impl Query {
    /// The recall request of this query (text, context_filter, spatial_sort).
    pub fn request(&self) -> robotmem::RecallRequest<'_> {
        robotmem::RecallRequest {
            query: self.text,
            context_filter: self.filter.as_deref(),
            spatial_sort: self.spatial.as_deref(),
            ..Default::default()
        }
    }
}

const QUERIES_EN: &[&str] = &[
    "grasp red mug",
    "push box final distance",
    "navigation to charging dock",
    "bottle slipped out of the gripper",
    "how much force to grasp the paper cup",
    "failed grasp on conveyor belt",
    "UR5e grasp force",
    "push on carpet",
    "replans navigation kitchen",
    "approach angle for the blue bowl",
    "Franka Panda grasping the screwdriver",
    "what speed to push the tray",
    "place plate on steel shelf position error",
    "obstacle clearance corridor",
    "grip force transparent bottle",
    "tennis ball slip",
];
const QUERIES_ZH: &[&str] =
    &["抓取杯子", "推动箱子最终距离", "导航到充电桩", "抓取失败 滑落", "夹持力 瓶子", "放置盘子误差"];

const FILTERS: &[&str] = &[
    r#"{"task.success": true}"#,
    r#"{"params.force.value": {"$lt": 15}}"#,
    r#"{"env.sim_or_real": "real"}"#,
    r#"{"robot.type": "UR5e", "task.success": true}"#,
    r#"{"task.name": "grasp", "params.force.value": {"$gte": 10, "$lte": 20}}"#,
    r#"{"task.outcome": {"$ne": "success"}}"#,
    // Selective (about 1 memory in 50): the query's matches rarely satisfy it.
    r#"{"robot.type": "Kinova Gen3", "task.name": "place", "task.success": false}"#,
];

/// The recall mix: half plain, a quarter with a context_filter, a quarter with
/// a spatial_sort; about one query in five is Chinese.
pub fn queries(count: usize, seed: u64) -> Vec<Query> {
    let mut r = Rng::new(seed ^ 0xA11CE);
    (0..count)
        .map(|i| {
            let kind = match i % 4 {
                0 | 1 => Kind::Plain,
                2 => Kind::Filter,
                _ => Kind::Spatial,
            };
            let chinese = r.chance(0.2);
            let text = if chinese { *r.pick(QUERIES_ZH) } else { *r.pick(QUERIES_EN) };
            let filter = (kind == Kind::Filter).then(|| r.pick(FILTERS).to_string());
            let spatial = (kind == Kind::Spatial).then(|| {
                let t = [r.range(0.2, 0.8), r.range(-0.4, 0.4), r.range(0.0, 0.3)];
                format!(
                    r#"{{"field": "spatial.object_position", "target": [{:.3}, {:.3}, {:.3}], "max_distance": 0.3}}"#,
                    t[0], t[1], t[2]
                )
            });
            Query { kind, text, filter, spatial, chinese }
        })
        .collect()
}
