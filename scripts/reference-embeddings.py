#!/usr/bin/env python3
"""Reference sentence embeddings, computed independently of the Rust code.

Usage (scripts/fetch-model.sh runs it for you):

    .cache/venv/bin/python scripts/reference-embeddings.py \
        --model-dir .cache/models/all-MiniLM-L6-v2-int8 \
        --sentences tests/data/embed_sentences.json \
        --out .cache/models/reference-embeddings.json

Each sentence is embedded ALONE (batch of 1, no padding): BERT WordPiece
tokenisation, the ONNX model on onnxruntime's CPU provider, mean pooling of
last_hidden_state over the attention mask, L2 normalisation.

The tokenizer is a small pure-Python re-implementation of the Hugging Face
`tokenizers` pipeline that tokenizer.json describes (added tokens,
BertNormalizer, BertPreTokenizer, WordPiece, [CLS] ... [SEP] template), so the
reference does not share code with the Rust `tokenizers` crate. Settings are
read from tokenizer.json, except truncation and padding: tokenizer.json ships
with truncation to 128 and fixed padding to 128 (the Hugging Face hub file), and
this script deliberately ignores both and truncates to robotmem-model.json's
max_tokens (special tokens included) without padding.

Extra modes:
    --inspect                print the model's inputs, outputs, opsets, op types
    --compare-hf-tokenizers  check the ids against the `tokenizers` package
                             (not in the reference venv; install it elsewhere)
"""

import argparse
import json
import os
import re
import sys
import unicodedata

import numpy as np

import reference_common  # scripts/reference_common.py, beside this script
import onnxruntime as ort

# --------------------------------------------------------------------------
# Tokenizer: BertNormalizer + BertPreTokenizer + WordPiece, as in HF tokenizers.
# --------------------------------------------------------------------------

# Rust's char::is_whitespace (the Unicode White_Space property).
_WHITE_SPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_whitespace(c):
    return c in _WHITE_SPACE  # includes \t \n \r


def _is_control(c):
    # Cc Cf Co Cs, but not Cn: tokenizers takes the categories from the
    # unicode_categories crate, whose tables hold no unassigned code points.
    if c in "\t\n\r":
        return False
    return unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")


def _is_chinese_char(c):
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_punctuation(c):
    return c in _ASCII_PUNCT or unicodedata.category(c).startswith("P")


class WordPieceTokenizer:
    def __init__(self, tokenizer_json_path):
        with open(tokenizer_json_path, encoding="utf-8") as f:
            spec = json.load(f)

        model = spec["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"unsupported tokenizer model {model.get('type')!r}")
        self.vocab = model["vocab"]
        self.unk_token = model["unk_token"]
        self.prefix = model.get("continuing_subword_prefix", "##")
        self.max_chars = model.get("max_input_chars_per_word", 100)

        norm = spec.get("normalizer") or {}
        if norm.get("type") != "BertNormalizer":
            raise ValueError(f"unsupported normalizer {norm.get('type')!r}")
        self.clean_text = norm.get("clean_text", True)
        self.handle_chinese_chars = norm.get("handle_chinese_chars", True)
        self.lowercase = norm.get("lowercase", True)
        sa = norm.get("strip_accents")
        self.strip_accents = self.lowercase if sa is None else sa

        pre = spec.get("pre_tokenizer") or {}
        if pre.get("type") != "BertPreTokenizer":
            raise ValueError(f"unsupported pre_tokenizer {pre.get('type')!r}")

        post = spec.get("post_processor") or {}
        if post.get("type") == "TemplateProcessing":
            single = post["single"]
            specials = post["special_tokens"]
            if (
                len(single) != 3
                or "SpecialToken" not in single[0]
                or "Sequence" not in single[1]
                or "SpecialToken" not in single[2]
            ):
                raise ValueError("unsupported single-sequence template")
            (self.cls_id,) = specials[single[0]["SpecialToken"]["id"]]["ids"]
            (self.sep_id,) = specials[single[2]["SpecialToken"]["id"]]["ids"]
        elif post.get("type") == "BertProcessing":
            self.cls_id = post["cls"][1]
            self.sep_id = post["sep"][1]
        else:
            raise ValueError(f"unsupported post_processor {post.get('type')!r}")
        self.num_special = 2

        # Added tokens are matched in the raw text before normalisation
        # (leftmost, longest first), as the tokenizers library does.
        self.added = {}
        for tok in spec.get("added_tokens", []):
            if tok.get("normalized") or tok.get("single_word") or tok.get("lstrip") or tok.get("rstrip"):
                raise ValueError(f"unsupported added token options: {tok}")
            self.added[tok["content"]] = tok["id"]
        if self.added:
            alts = sorted(self.added, key=len, reverse=True)
            self.added_re = re.compile("|".join(re.escape(a) for a in alts))
        else:
            self.added_re = None

    def normalize(self, text):
        if self.clean_text:
            out = []
            for c in text:
                if c == "\x00" or c == "\ufffd" or _is_control(c):
                    continue
                out.append(" " if _is_whitespace(c) else c)
            text = "".join(out)
        if self.handle_chinese_chars:
            text = "".join(f" {c} " if _is_chinese_char(c) else c for c in text)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lowercase:
            # per character, like Rust's char::to_lowercase (no final-sigma rule)
            text = "".join(c.lower() for c in text)
        return text

    @staticmethod
    def pre_tokenize(text):
        words, cur = [], []
        for c in text:
            if _is_whitespace(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
            elif _is_punctuation(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(c)
            else:
                cur.append(c)
        if cur:
            words.append("".join(cur))
        return words

    def wordpiece(self, word):
        if len(word) > self.max_chars:
            return [self.vocab[self.unk_token]]
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end]
                if start > 0:
                    piece = self.prefix + piece
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.vocab[self.unk_token]]
            ids.append(found)
            start = end
        return ids

    def _segments(self, text):
        if self.added_re is None:
            yield False, text
            return
        pos = 0
        for m in self.added_re.finditer(text):
            if m.start() > pos:
                yield False, text[pos : m.start()]
            yield True, m.group(0)
            pos = m.end()
        if pos < len(text):
            yield False, text[pos:]

    def encode(self, text, max_tokens):
        ids = []
        for is_added, seg in self._segments(text):
            if is_added:
                ids.append(self.added[seg])
            else:
                for word in self.pre_tokenize(self.normalize(seg)):
                    ids.extend(self.wordpiece(word))
        ids = ids[: max_tokens - self.num_special]
        return [self.cls_id] + ids + [self.sep_id]


# --------------------------------------------------------------------------
# Model inspection (minimal protobuf walk; the `onnx` package is not needed).
# --------------------------------------------------------------------------


def _pb_fields(buf, start=0, end=None):
    """Yield (field_number, wire_type, value) of one protobuf message."""
    end = len(buf) if end is None else end
    i = start
    while i < end:
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            val, i = _varint(buf, i)
        elif wt == 1:
            val, i = buf[i : i + 8], i + 8
        elif wt == 2:
            n, i = _varint(buf, i)
            val, i = (i, i + n), i + n
        elif wt == 5:
            val, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        yield field, wt, val


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def inspect_model(path):
    with open(path, "rb") as f:
        buf = f.read()
    info = {"file": path, "size_bytes": len(buf), "opset_import": {}, "op_types": {}}
    graph = None
    for field, _, val in _pb_fields(buf):
        if field == 1:
            info["ir_version"] = val
        elif field == 2:
            info["producer_name"] = bytes(buf[val[0] : val[1]]).decode()
        elif field == 3:
            info["producer_version"] = bytes(buf[val[0] : val[1]]).decode()
        elif field == 8:
            domain, version = "", None
            for f2, _, v2 in _pb_fields(buf, *val):
                if f2 == 1:
                    domain = bytes(buf[v2[0] : v2[1]]).decode()
                elif f2 == 2:
                    version = v2
            info["opset_import"][domain or "ai.onnx"] = version
        elif field == 7:
            graph = val
    if graph is not None:
        for f2, _, v2 in _pb_fields(buf, *graph):
            if f2 == 1:  # NodeProto
                op, dom = None, ""
                for f3, _, v3 in _pb_fields(buf, *v2):
                    if f3 == 4:
                        op = bytes(buf[v3[0] : v3[1]]).decode()
                    elif f3 == 7:
                        dom = bytes(buf[v3[0] : v3[1]]).decode()
                key = f"{dom}::{op}" if dom else op
                info["op_types"][key] = info["op_types"].get(key, 0) + 1
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    info["inputs"] = [{"name": i.name, "type": i.type, "shape": i.shape} for i in sess.get_inputs()]
    info["outputs"] = [{"name": o.name, "type": o.type, "shape": o.shape} for o in sess.get_outputs()]
    return info


# --------------------------------------------------------------------------
# Embedding
# --------------------------------------------------------------------------


def embed_one(sess, input_names, ids, pooling, normalize):
    input_ids = np.asarray([ids], dtype=np.int64)
    mask = np.ones_like(input_ids)
    feeds = {"input_ids": input_ids, "attention_mask": mask}
    if "token_type_ids" in input_names:
        feeds["token_type_ids"] = np.zeros_like(input_ids)
    unknown = set(input_names) - set(feeds)
    if unknown:
        raise ValueError(f"model wants inputs this script does not know: {sorted(unknown)}")
    (hidden,) = sess.run(["last_hidden_state"], feeds)
    hidden = hidden.astype(np.float64)[0]  # [seq, dim]
    m = mask[0].astype(np.float64)[:, None]
    if pooling == "mean":
        vec = (hidden * m).sum(axis=0) / max(m.sum(), 1e-9)
    elif pooling == "cls":
        vec = hidden[0]
    else:
        raise ValueError(f"unsupported pooling {pooling!r}")
    if normalize:
        vec = vec / max(np.linalg.norm(vec), 1e-12)
    return vec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--sentences", help="JSON array of strings")
    ap.add_argument("--out", help="where to write the reference JSON")
    ap.add_argument("--inspect", action="store_true", help="print model facts and exit")
    ap.add_argument("--compare-hf-tokenizers", action="store_true",
                    help="compare token ids with the `tokenizers` package and exit")
    args = ap.parse_args()

    model_path = os.path.join(args.model_dir, "model.onnx")
    tok_path = os.path.join(args.model_dir, "tokenizer.json")
    cfg = reference_common.read_config(args.model_dir)
    max_tokens = int(cfg["max_tokens"])

    if args.inspect:
        print(json.dumps(inspect_model(model_path), indent=2))
        with open(tok_path, encoding="utf-8") as f:
            spec = json.load(f)
        for key in ("truncation", "padding", "normalizer", "pre_tokenizer", "post_processor"):
            print(f"tokenizer.json {key}: {json.dumps(spec.get(key))}")
        return 0

    if not args.sentences:
        ap.error("--sentences is required")
    sentences = reference_common.read_sentences(args.sentences)

    tok = WordPieceTokenizer(tok_path)
    texts = [cfg.get("passage_prefix", "") + s for s in sentences]
    all_ids = [tok.encode(t, max_tokens) for t in texts]

    if args.compare_hf_tokenizers:
        import tokenizers  # noqa: PLC0415

        hf = tokenizers.Tokenizer.from_file(tok_path)
        hf.no_padding()
        hf.enable_truncation(max_tokens)
        bad = 0
        for s, ids in zip(texts, all_ids):
            ref = hf.encode(s).ids
            if ref != ids:
                bad += 1
                print(f"MISMATCH {s[:60]!r}\n  ours {ids}\n  hf   {ref}")
        print(f"tokenizers {tokenizers.__version__}: {len(texts) - bad}/{len(texts)} sentences identical")
        return 1 if bad else 0

    if not args.out:
        ap.error("--out is required")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1  # deterministic reductions
    sess = ort.InferenceSession(model_path, sess_options=so, providers=["CPUExecutionProvider"])
    input_names = [i.name for i in sess.get_inputs()]
    embeddings = []
    for ids in all_ids:
        vec = embed_one(sess, input_names, ids, cfg.get("pooling", "mean"), cfg.get("normalize", True))
        embeddings.append(reference_common.as_reference(vec, cfg))
    reference_common.write_reference(args.out, cfg, ort.__version__, sentences, all_ids, embeddings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
