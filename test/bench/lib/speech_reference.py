#!/usr/bin/env python3
"""Bare ONNX Runtime in Python (the PyPI onnxruntime, its default session options) on the phoneme ids
and style rows the ceiling benchmark gives it (lib/ceiling-speech.ts): CPU seconds for the chunks
and the audio they make. Reads the job's JSON file ({model, chunks: [{ids, style}]}), prints one
JSON line. Never used by the product or the tests."""
import json, sys, time
import numpy as np, onnxruntime as ort

job = json.load(open(sys.argv[1]))
sess = ort.InferenceSession(job["model"], providers=["CPUExecutionProvider"])
names = [i.name for i in sess.get_inputs()]
ids_name = next(n for n in names if "token" in n or "input_ids" in n)
style_name = next(n for n in names if "style" in n or "ref_s" in n)
speed_name = next((n for n in names if "speed" in n), None)

def run(c):
    feeds = {ids_name: np.array([[0, *c["ids"], 0]], np.int64), style_name: np.array([c["style"]], np.float32)}
    if speed_name: feeds[speed_name] = np.array([1.0], np.float32)
    return sess.run(None, feeds)[0].size

run(job["chunks"][0])
c0, w0 = time.process_time(), time.perf_counter()
samples = sum(run(c) for c in job["chunks"])
print(json.dumps({"audioSeconds": samples / 24000, "cpuSeconds": time.process_time() - c0, "wallSeconds": time.perf_counter() - w0, "ort": ort.__version__}))
