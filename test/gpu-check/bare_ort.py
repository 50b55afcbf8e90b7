#!/usr/bin/env python3
"""Bare ONNX Runtime on the same model and the same kind of inputs: the floor the server is held
against. usage: bare_ort.py MODEL_DIR PROVIDER(cuda|cpu) SECONDS BATCH [GRAPH]
GRAPH: the file under MODEL_DIR/onnx to load (default model.onnx), e.g. the optimised graph
Switchyard saved (model.opt.<provider>.ort<version>.onnx); loaded at level "all", as the server does."""
import json, random, sys, time
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
d, prov, secs, batch = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
graph = sys.argv[5] if len(sys.argv) > 5 else "model.onnx"
tok = Tokenizer.from_file(f"{d}/tokenizer.json")
words = ("the of and to in is was for on that with as by at from his her an which it be are this "
         "river market signal engine battery window garden morning letter station doctor camera "
         "history budget forest harbor planet silver winter summer network request balance token").split()
rnd = random.Random(1)
texts = [" ".join(rnd.choice(words) for _ in range(rnd.randint(30, 60))) + "." for _ in range(batch)]
enc = tok.encode_batch(texts); S = max(len(e.ids) for e in enc)
ids = np.zeros((batch, S), np.int64); am = np.zeros((batch, S), np.int64)
for i, e in enumerate(enc): ids[i, :len(e.ids)] = e.ids; am[i, :len(e.ids)] = 1
p = ["CUDAExecutionProvider"] if prov == "cuda" else ["CPUExecutionProvider"]
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
t = time.perf_counter(); s = ort.InferenceSession(f"{d}/onnx/{graph}", so, providers=p); load = time.perf_counter() - t
for _ in range(3): s.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": am})
# One input of ~40 tokens (issue 24's one-input target).
one = ids[:1, :min(40, int(am[0].sum()))]; lat = []
for _ in range(3): s.run(["sentence_embedding"], {"input_ids": one, "attention_mask": np.ones_like(one)})
for _ in range(21):
    t = time.perf_counter(); s.run(["sentence_embedding"], {"input_ids": one, "attention_mask": np.ones_like(one)}); lat.append(time.perf_counter() - t)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < secs:
    s.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": am}); n += 1
el = time.perf_counter() - t0
print(json.dumps({"what": "bare", "graph": graph, "provider": s.get_providers()[0], "load_s": round(load, 1), "batch": batch, "seq": S,
                  "one_input_tokens": int(one.shape[1]), "b1_ms": round(sorted(lat)[10] * 1e3, 2),
                  "batches_s": round(n / el, 2), "tok_s": round(n * int(am.sum()) / el, 1)}))
