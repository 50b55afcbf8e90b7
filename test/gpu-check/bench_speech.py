#!/usr/bin/env python3
"""Speech load against a running Switchyard: CONCURRENCY clients, each asking for the same
~400-character text as raw PCM (24 kHz, 16-bit mono) again and again for SECONDS. Prints the
median time to first audio, the median real-time factor (request time / audio seconds; < 1 is
faster than real time) and the audio seconds served per wall second.
usage: bench_speech.py BASE KEY CONCURRENCY SECONDS [VOICE]"""
import asyncio, json, statistics, sys, time
import aiohttp
base, key, conc, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
voice = sys.argv[5] if len(sys.argv) > 5 else "af_heart"
TEXT = ("The harbour was quiet before dawn. Fishing boats rocked against the pier while gulls "
        "circled the masts, and the first light touched the water. An old man coiled his ropes, "
        "checked the weather, and waved to the baker opening her shop across the square. By six "
        "the market was awake: crates of fish, baskets of bread, and the smell of coffee drifting "
        "from the cafe on the corner, where the same three friends met every morning.")
H = {"authorization": f"Bearer {key}", "content-type": "application/json"}
req = {"model": "voice-82m", "input": TEXT, "voice": voice, "response_format": "pcm"}
if voice[:1] not in ("a", "b"): req["lang_code"] = "a"  # e.g. the Japanese packs fetch.sh lays out
BODY = json.dumps(req)
async def one(s):
    t = time.perf_counter(); first = None; n = 0
    async with s.post(f"{base}/v1/audio/speech", headers=H, data=BODY) as r:
        if r.status != 200: raise RuntimeError(f"{r.status} {(await r.text())[:200]}")
        async for chunk in r.content.iter_any():
            if first is None and chunk: first = time.perf_counter() - t
            n += len(chunk)
    total = time.perf_counter() - t; audio = n / 2 / 24000
    return first or total, total / audio if audio else float("inf"), audio
async def main():
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc + 4), timeout=aiohttp.ClientTimeout(total=600)) as s:
        await one(s)
        rows, end = [], time.perf_counter() + secs
        async def worker():
            while time.perf_counter() < end: rows.append(await one(s))
        t0 = time.perf_counter(); await asyncio.gather(*[worker() for _ in range(conc)]); el = time.perf_counter() - t0
        print(json.dumps({"what": "speech", "conc": conc, "requests": len(rows), "first_audio_p50_ms": round(statistics.median(r[0] for r in rows) * 1e3, 1),
                          "rtf_p50": round(statistics.median(r[1] for r in rows), 4), "audio_s_per_s": round(sum(r[2] for r in rows) / el, 2)}))
asyncio.run(main())
