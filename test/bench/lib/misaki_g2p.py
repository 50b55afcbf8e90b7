#!/usr/bin/env python3
"""Reads lines of text on stdin, writes misaki's phonemes for each as one JSON string per line.
Used by test/bench/real-models.bench.ts (MISAKI_PYTHON=/path/to/python with misaki[en] installed)
to measure the phoneme error rate of Switchyard's own front end; never used by the product or
the tests. misaki asks spaCy for en_core_web_sm and downloads it when missing; without network a
copy installed under another package name can be named with SPACY_EN_MODEL."""
import json, os, sys
import spacy

model = os.environ.get("SPACY_EN_MODEL")
if model:
    _load = spacy.load
    spacy.util.is_package = lambda name: True
    spacy.load = lambda name, **kw: _load(model if name == "en_core_web_sm" else name, **kw)

from misaki import en

g2p = en.G2P(trf=False, british=os.environ.get("MISAKI_BRITISH") == "1", fallback=None, unk="")
for line in sys.stdin:
    phonemes, _ = g2p(line.rstrip("\n"))
    print(json.dumps(phonemes), flush=True)
