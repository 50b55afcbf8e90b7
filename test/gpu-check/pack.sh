#!/usr/bin/env bash
# Packs what a GPU check needs into parts small enough for a GPU machine that takes 64 MiB per
# transfer and reaches no network. Run from anywhere; it works in the project's root:
#   - the binary (built now with `npm run build`: dist/switchyard), zstd-compressed;
#   - the wheel of ONNX Runtime's CUDA provider (PyPI onnxruntime-gpu, the version of
#     onnxruntime-node), which the GPU machine installs with `switchyard runtime install` and also
#     unpacks for the bare-ORT floor in Python;
#   - EmbeddingGemma-300m's config and tokenizer (from shared/real-weights/fetch.sh's output; its
#     1.2 GB weights cannot travel, gpu-run.sh makes random ones of the same architecture);
#   - optionally a voice-82m folder (onnx/model.onnx = Kokoro's fp32 export, voices/*.bin) for the
#     speech run;
#   - these scripts, test/bench/embeddings-ceiling.bench.ts bundled (ceiling.js), and zstd with its
#     libraries (that machine has none).
# Writes .gpu-parts/1..N and .gpu-parts/tools (ignored by .gitignore, so no part travels unasked).
# usage: test/gpu-check/pack.sh WEIGHTS_DIR [VOICE_DIR]
#   WEIGHTS_DIR: fetch.sh's output (models/embedding-300m/config.json + tokenizer.json are used)
#   VOICE_DIR:   a voice-82m folder (e.g. onnx-community/Kokoro-82M-v1.0-ONNX: onnx/model.onnx,
#                config.json, voices/*.bin); without it the check has no speech run
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
W=$(cd "${1:?usage: pack.sh WEIGHTS_DIR [VOICE_DIR]}" && pwd)
VOICE=${2:-}
[ -n "$VOICE" ] && VOICE=$(cd "$VOICE" && pwd)
cd "$ROOT"
E=$W/models/embedding-300m
[ -f "$E/config.json" ] && [ -f "$E/tokenizer.json" ] || { echo "no $E/config.json or tokenizer.json: run shared/real-weights/fetch.sh first" >&2; exit 1; }
if [ -n "$VOICE" ] && [ ! -f "$VOICE/onnx/model.onnx" ]; then echo "no $VOICE/onnx/model.onnx (Kokoro's fp32 export)" >&2; exit 1; fi
ORT=$(node -p 'require("./node_modules/onnxruntime-node/package.json").version')
npm run build   # always: a binary left from older code would measure that code
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
S=$T/stage
mkdir -p "$S/egemma" "$S/tools" "$S/bin" "$S/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$S/wheels" "onnxruntime-gpu==$ORT"
zstd -q -19 -T0 --long=27 dist/switchyard -o "$S/switchyard.zst"
cp "$E/config.json" "$S/egemma/"
for f in tokenizer_config.json special_tokens_map.json config_sentence_transformers.json; do
  if [ -f "$E/$f" ]; then cp "$E/$f" "$S/egemma/"; fi
done
zstd -q -19 "$E/tokenizer.json" -o "$S/egemma/tokenizer.json.zst"
cp "$HERE"/*.py "$HERE/gpu-run.sh" "$S/tools/"
# The server-cost benchmark, bundled (the binary runs it with BUN_BE_BUN=1; ORT's Node addon stays
# out, so its bare-ORT arms say they cannot run there: bare_ort.py measures that floor).
"$ROOT/node_modules/.bin/bun" build test/bench/embeddings-ceiling.bench.ts --target=bun --external onnxruntime-node --outfile "$S/tools/ceiling.js"
cp test/bench/lib/speech_reference.py "$S/tools/"
if [ -n "$VOICE" ]; then
  mkdir -p "$S/voice-82m/onnx"
  zstd -q -19 -T0 "$VOICE/onnx/model.onnx" -o "$S/voice-82m/onnx/model.onnx.zst"
  cp -r "$VOICE/voices" "$S/voice-82m/"
  for f in config.json tokenizer.json tokenizer_config.json; do
    if [ -f "$VOICE/$f" ]; then cp "$VOICE/$f" "$S/voice-82m/"; fi
  done
fi
cp "$(command -v zstd)" "$S/bin/"
ldd "$(command -v zstd)" | awk '/=>/{print $3}' | grep -v 'libc.so\|ld-linux\|libm.so\|libpthread' | while read -r l; do cp -L "$l" "$S/bin/"; done
tar cf "$T/all.tar" -C "$S" .
rm -rf .gpu-parts && mkdir -p .gpu-parts
(cd "$T" && split -b 56000000 -d -a 2 all.tar part.)
n=0
for p in "$T"/part.*; do n=$((n + 1)); mkdir -p ".gpu-parts/$n"; mv "$p" ".gpu-parts/$n/"; done
mkdir -p .gpu-parts/tools && cp "$S/tools/gpu-run.sh" "$S/bin/"* .gpu-parts/tools/
echo "$n parts. Send them one after another, each command carrying only its own folder (carry: [\".gpu-parts/N\"]):"
for i in $(seq 1 "$n"); do echo "  carry .gpu-parts/$i: mkdir -p /root/stash && cp .gpu-parts/$i/* /root/stash/"; done
echo "  then carry .gpu-parts/tools: bash .gpu-parts/tools/gpu-run.sh   (allow 600 s, with SECS=8 when speech is packed; the table is printed at the end and written to \$OUT/table.md)"
