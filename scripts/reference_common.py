"""What both reference-embedding writers share (scripts/reference-embeddings.py
for WordPiece models, scripts/make-use-model.py for the multilingual model; they
run in different venvs, so this module needs only the standard library and
numpy): the model config and sentence list, and the reference JSON that
tests/embedding.rs reads."""

import json
import os
import sys


def read_config(model_dir):
    with open(os.path.join(model_dir, "robotmem-model.json"), encoding="utf-8") as f:
        return json.load(f)


def read_sentences(path):
    with open(path, encoding="utf-8") as f:
        sentences = json.load(f)
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        sys.exit("sentences file must be a JSON array of strings")
    return sentences


def as_reference(vec, cfg):
    """One embedding as stored: the model's dimension checked, float32 values
    with 9 significant digits (which round-trip a float32 exactly)."""
    import numpy as np  # noqa: PLC0415

    if vec.shape != (cfg["dim"],):
        sys.exit(f"embedding has shape {vec.shape}, expected ({cfg['dim']},)")
    return [float(f"{x:.9g}") for x in vec.astype(np.float32)]


def write_reference(out_path, cfg, ort_version, sentences, all_ids, embeddings):
    out = {
        "model": cfg["name"],
        "onnxruntime": ort_version,
        "max_tokens": int(cfg["max_tokens"]),
        "sentences": sentences,
        "token_counts": [len(ids) for ids in all_ids],
        "token_ids": all_ids,
        "embeddings": embeddings,
    }
    part = out_path + ".part"
    with open(part, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")
    os.chmod(part, 0o644)
    os.replace(part, out_path)
    print(f"wrote {len(embeddings)} reference embeddings to {out_path}")
