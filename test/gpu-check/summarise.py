#!/usr/bin/env python3
"""Issue 24's table from gpu-run.sh's JSON lines. usage: summarise.py OUT_DIR"""
import glob, json, os, sys
out = sys.argv[1]
def rows(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.startswith("{")] if os.path.exists(p) else []
bare = rows("bare.jsonl")
print("| run | tok/s | one input (ms) | GPU busy |\n|---|---:|---:|---:|")
ref = {}
for b in bare:
    label = f"bare ORT {b['provider'].replace('ExecutionProvider', '')} batch {b['batch']}, {b['graph']}"
    ref.setdefault((b["provider"], b["graph"]), b)
    print(f"| {label} | {b['tok_s']:,.0f} | {b['b1_ms']} ({b['one_input_tokens']} tokens) | |")
for prov in ["cuda", "cpu"]:
    base = next((b for b in bare if b["batch"] == 32 and b["graph"] == "model.onnx" and b["provider"].lower().startswith(prov)), None)
    for r in rows(f"serve-{prov}.jsonl"):
        ratio = f" ({r['tok_s'] / base['tok_s']:.2f}x bare)" if base else ""
        util = f"{r['gpu_util']}%" if "gpu_util" in r else ""
        print(f"| Switchyard {prov} c={r['conc']} | {r['tok_s']:,.0f}{ratio} | p50 {r['c1_p50_ms']} | {util} |")
sp = rows("speech.jsonl")
if sp:
    print("\n| speech (voice-82m) | first audio p50 (ms) | real-time factor p50 | audio s per s |\n|---|---:|---:|---:|")
    for r in sp: print(f"| {r.get('provider', '')} c={r['conc']} | {r['first_audio_p50_ms']} | {r['rtf_p50']} | {r['audio_s_per_s']} |")
for f in sorted(glob.glob(os.path.join(out, "note-*.txt"))): print("\n" + open(f).read().strip())
