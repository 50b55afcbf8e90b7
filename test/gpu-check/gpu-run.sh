#!/usr/bin/env bash
# Runs on the GPU machine, from the folder it was sent in, after pack.sh's parts were stashed in
# /root/stash (STASH=…) with .gpu-parts/tools sent along. Logs and JSON lines go to $OUT; issue
# 24's table is printed at the end and written to $OUT/table.md. Needs on that machine: an NVIDIA
# driver, Python 3 with numpy, onnx, safetensors, tokenizers and aiohttp, and the CUDA 13
# libraries + cuDNN 9 somewhere Switchyard looks (PyTorch's nvidia-* pip packages or
# /usr/local/cuda*; see README "Running on a GPU").
set -u
T=$(cd "$(dirname "$0")" && pwd)
export PATH=$T:$PATH LD_LIBRARY_PATH=$T${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
S=${STASH:-/root/stash}
OUT=${OUT:-/tmp/out}
SECS=${SECS:-10}
VOICE=${VOICE:-af_heart}   # a voice in voice-82m/voices; a non-English one reads English text (lang_code a)
mkdir -p "$OUT"
log() { echo "== $(date +%T) $*"; }
cd "$S" || { echo "no $S"; exit 1; }
if ls part.* >/dev/null 2>&1; then cat part.* > all.tar && tar xf all.tar && rm -f all.tar part.*; fi
zstd -q -d -f egemma/tokenizer.json.zst -o egemma/tokenizer.json || { echo "assemble failed"; exit 1; }
H=$S/tools
zstd -q -d -f switchyard.zst -o switchyard && chmod +x switchyard
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/note-gpu.txt"

# The CUDA libraries from Python's site-packages (PyTorch's nvidia-* packages) for python's ORT;
# Switchyard finds them by itself, the provider comes from `switchyard runtime install`.
SP=$(python3 -c 'import site;print(site.getsitepackages()[0])')
LIBS=$(find "$SP" /usr/local/cuda* -maxdepth 6 \( -name 'libcublas.so.13' -o -name 'libcudart.so.13' -o -name 'libcufft.so.12' -o -name 'libcurand.so.10' -o -name 'libcudnn.so.9' -o -name 'libcublasLt.so.13' \) 2>/dev/null)
if [ -n "$LIBS" ]; then LD_LIBRARY_PATH=$(echo "$LIBS" | xargs -n1 dirname | sort -u | paste -sd:):$LD_LIBRARY_PATH; fi
export LD_LIBRARY_PATH
export SWITCHYARD_RUNTIME_DIR=$S/runtime
log "switchyard runtime install (the CUDA provider from its wheel, verified)"
./switchyard runtime install "$S/wheels" 2>&1 | tail -3
./switchyard runtime list 2>&1 | tee "$OUT/runtime-list.txt" | grep -i "provider\|gpu" | head -4
mkdir -p "$S/py" && python3 -m zipfile -e "$S"/wheels/onnxruntime_gpu-*.whl "$S/py"
export PYTHONPATH=$S/py
python3 -c 'import onnxruntime as o; print("python ort", o.__version__, o.get_available_providers())'

log "random-weight EmbeddingGemma-300m architecture"
M=$S/models
python3 "$H/rand_egemma.py" egemma/config.json egemma "$S/st" && python3 "$H/export_egemma_onnx.py" "$S/st" "$M/embedding-300m" | tail -1
rm -rf "$S/st"
if [ -f voice-82m/onnx/model.onnx.zst ]; then
  mkdir -p "$M" && rm -rf "$M/voice-82m" && cp -r voice-82m "$M/" && zstd -q -d -f --rm "$M/voice-82m/onnx/model.onnx.zst" -o "$M/voice-82m/onnx/model.onnx"
fi

log "bare ORT, plain graph"
: > "$OUT/bare.jsonl"
for b in 1 32; do python3 "$H/bare_ort.py" "$M/embedding-300m" cuda "$SECS" "$b" | tee -a "$OUT/bare.jsonl"; done
python3 "$H/bare_ort.py" "$M/embedding-300m" cpu "$SECS" 32 | tee -a "$OUT/bare.jsonl"

ADMIN=gpu-check-admin-token-0123456789
serve() { # serve PROVIDER PORT: starts the server, waits for embedding-300m (the optimised graph is made on first load)
  rm -rf "$S/data-$1"
  SWITCHYARD_ONNX_PROVIDER=$1 PORT=$2 HOST=127.0.0.1 SWITCHYARD_DATA_DIR=$S/data-$1 SWITCHYARD_MODELS_DIR=$M \
    SWITCHYARD_ADMIN_TOKEN=$ADMIN XDG_CACHE_HOME=$S/cache SWITCHYARD_RATE_LIMIT_RPM=1000000 SWITCHYARD_CONCURRENCY_LIMIT=1000 \
    ./switchyard > "$OUT/serve-$1.log" 2>&1 &
  echo $! > "$S/pid"
  local want=embedding-300m
  if [ -d "$M/voice-82m" ]; then want="embedding-300m.*voice-82m\|voice-82m.*embedding-300m"; fi
  for _ in $(seq 1 360); do curl -s "localhost:$2/v1/models" | grep -q "$want" && return 0; sleep 0.5; done
  echo "server on $1 did not load its models"; tail -5 "$OUT/serve-$1.log"
}
stop() { kill "$(cat "$S/pid")" 2>/dev/null; sleep 2; }
key() { # key PORT: a fresh account's API key
  local A=http://127.0.0.1:$1/admin a
  a=$(curl -s "$A/accounts" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' -d '{"name":"gpu","credits":100000}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
  curl -s -X POST "$A/accounts/$a/keys" -H "authorization: Bearer $ADMIN" | python3 -c 'import sys,json;print(json.load(sys.stdin)["key"])'
}
vec() { curl -s "localhost:$1/v1/embeddings" -H "authorization: Bearer $2" -H 'content-type: application/json' -d '{"model":"embedding-300m","input":"same text on both providers"}' \
  | python3 -c 'import sys,json;print(json.dumps(json.load(sys.stdin)["data"][0]["embedding"]))'; }
with_util() { # with_util FILE CMD...: runs CMD, samples GPU utilisation meanwhile, appends its JSON line with gpu_util
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 > "$S/util.txt" 2>/dev/null &
  local smi=$! line
  line=$("${@:2}")
  kill "$smi" 2>/dev/null
  echo "$line" | python3 -c "import sys,json;r=json.loads(sys.stdin.read());u=[int(x) for x in open('$S/util.txt').read().split() if x.isdigit()];r['gpu_util']=round(sum(u)/len(u)) if u else None;print(json.dumps(r))" | tee -a "$1"
}

log "switchyard, cuda"
: > "$OUT/serve-cuda.jsonl"
serve cuda 18081
grep -i "model loaded\|fallback" "$OUT/serve-cuda.log" | head -4
K=$(key 18081)
vec 18081 "$K" > "$S/vec-cuda.json"
for c in 1 16 64; do with_util "$OUT/serve-cuda.jsonl" python3 "$H/bench_embed.py" http://127.0.0.1:18081 "$K" "$c" "$SECS" 30; done
: > "$OUT/speech.jsonl"
if [ -d "$M/voice-82m" ]; then
  log "speech on cuda (Kokoro fp32)"
  for c in 1 16; do python3 "$H/bench_speech.py" http://127.0.0.1:18081 "$K" "$c" "$SECS" "$VOICE" | python3 -c 'import sys,json;r=json.loads(sys.stdin.read());r["provider"]="cuda";print(json.dumps(r))' | tee -a "$OUT/speech.jsonl"; done
fi
stop

log "the server's own cost per request on cuda (test/bench/embeddings-ceiling.bench.ts, bundled)"
# The free model (EmbeddingGemma's tokenizer, a five-node graph) at c=64 and c=1, then the model in $M.
BUN_BE_BUN=1 BENCH_BIN=$S/switchyard SWITCHYARD_MODELS_DIR=$M SWITCHYARD_ONNX_PROVIDER=cuda XDG_CACHE_HOME=$S/cache \
  BENCH_SECONDS=${CEILING_SECS:-5} BENCH_ROUNDS=${CEILING_ROUNDS:-1} BENCH_ONLY=${CEILING_ONLY:-free,real} ./switchyard "$H/ceiling.js" 2>&1 | tee "$OUT/ceiling-cuda.md"

log "bare ORT on the optimised graph switchyard saved (one-input latency)"
OPT=$(cd "$M/embedding-300m/onnx" && ls model.opt.cuda.ort*.onnx 2>/dev/null | head -1)
if [ -n "$OPT" ]; then
  for b in 1 32; do python3 "$H/bare_ort.py" "$M/embedding-300m" cuda "$SECS" "$b" "$OPT" | tee -a "$OUT/bare.jsonl"; done
else
  echo "no optimised cuda graph was saved (see $OUT/serve-cuda.log)" | tee "$OUT/note-opt.txt"
fi

log "switchyard, cpu"
: > "$OUT/serve-cpu.jsonl"
serve cpu 18082
K=$(key 18082)
vec 18082 "$K" > "$S/vec-cpu.json"
python3 -c "import json;a=json.load(open('$S/vec-cuda.json'));b=json.load(open('$S/vec-cpu.json'));print('cosine cuda vs cpu', round(sum(x*y for x,y in zip(a,b)),7))" | tee "$OUT/note-cosine.txt"
for c in 1 64; do python3 "$H/bench_embed.py" http://127.0.0.1:18082 "$K" "$c" "$SECS" 20 | tee -a "$OUT/serve-cpu.jsonl"; done
if [ -d "$M/voice-82m" ]; then
  # c=1 only: fp32 Kokoro at c=16 on a CPU takes minutes to drain (speech.bench.ts has CPU rows).
  for c in 1; do python3 "$H/bench_speech.py" http://127.0.0.1:18082 "$K" "$c" "$SECS" "$VOICE" | python3 -c 'import sys,json;r=json.loads(sys.stdin.read());r["provider"]="cpu";print(json.dumps(r))' | tee -a "$OUT/speech.jsonl"; done
fi
stop
log "table"
python3 "$H/summarise.py" "$OUT" | tee "$OUT/table.md"
grep -E '^\|.*(base64|float)|^concurrency|^  .*adds|tokens/s' "$OUT/ceiling-cuda.md" | tee -a "$OUT/table.md"
log done
