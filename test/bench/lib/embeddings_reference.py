#!/usr/bin/env python3
"""Independent embedding reference for test/bench/real-models.bench.ts: reads a JSON list of texts
on stdin, writes their embedding-300m vectors (JSON) using the PyPI tokenizers and onnxruntime on
the model directory given as argument. BOS/EOS as tokenizer_config.json says. Never used by the
product or the tests."""
import json, sys
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer

d = sys.argv[1]
tok = Tokenizer.from_file(f"{d}/tokenizer.json")
cfg = json.load(open(f"{d}/tokenizer_config.json"))
bos, eos = tok.token_to_id("<bos>"), tok.token_to_id("<eos>")
sess = ort.InferenceSession(f"{d}/onnx/model.onnx", providers=["CPUExecutionProvider"])
out = []
for text in json.load(sys.stdin):
    ids = ([bos] if cfg.get("add_bos_token", True) else []) + tok.encode(text, add_special_tokens=False).ids + ([eos] if cfg.get("add_eos_token", True) else [])
    a = np.array([ids], np.int64)
    out.append(sess.run(["sentence_embedding"], {"input_ids": a, "attention_mask": np.ones_like(a)})[0][0].tolist())
print(json.dumps(out))
