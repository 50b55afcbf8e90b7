#!/usr/bin/env python3
"""Embeddings load against a running Switchyard: latency one at a time, then throughput at a
concurrency. usage: bench_embed.py BASE KEY CONCURRENCY SECONDS [N_SERIAL]"""
import asyncio, json, random, statistics, sys, time
import aiohttp
base, key, conc, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
nser = int(sys.argv[5]) if len(sys.argv) > 5 else 40
words = ("the of and to in is was for on that with as by at from his her an which it be are this "
         "river market signal engine battery window garden morning letter station doctor camera "
         "history budget forest harbor planet silver winter summer network request balance token").split()
rnd = random.Random(1)
def text(): return " ".join(rnd.choice(words) for _ in range(rnd.randint(30, 60))) + "."
H = {"authorization": f"Bearer {key}", "content-type": "application/json"}
async def one(s):
    t = time.perf_counter()
    async with s.post(f"{base}/v1/embeddings", headers=H, data=json.dumps({"model": "embedding-300m", "input": text()})) as r:
        b = await r.json()
        if r.status != 200: raise RuntimeError(f"{r.status} {str(b)[:200]}")
    return time.perf_counter() - t, b["usage"]["prompt_tokens"], len(b["data"][0]["embedding"])
async def main():
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc + 4)) as s:
        for _ in range(5): await one(s)
        lat = [ (await one(s))[0] for _ in range(nser) ]
        done, toks, end = 0, 0, time.perf_counter() + secs
        async def worker():
            nonlocal done, toks
            while time.perf_counter() < end:
                _, t, dim = await one(s); done += 1; toks += t
        t0 = time.perf_counter(); await asyncio.gather(*[worker() for _ in range(conc)]); el = time.perf_counter() - t0
        print(json.dumps({"what": "serve", "c1_p50_ms": round(statistics.median(lat) * 1e3, 2), "c1_p90_ms": round(sorted(lat)[int(len(lat) * .9)] * 1e3, 2),
                          "conc": conc, "req_s": round(done / el, 1), "tok_s": round(toks / el, 1), "requests": done}))
asyncio.run(main())
