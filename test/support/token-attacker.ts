/**
 * A hostile client as its own process (its work must not share an event loop with the client
 * whose latency a test measures): it sends texts that are costly to tokenize — 120,000 identical
 * characters and 8 MB bodies — to count_tokens, chat completions, Messages and Responses, with
 * ATTACK_CONCURRENCY requests in flight. Driven by lines on stdin: "go" starts a burst, "stop"
 * ends it (answered with `{"stopped":true}` once its requests in flight have been answered),
 * "quit" prints `{"sent":…, "statuses":{…}}` and exits. It prints `{"ready":true}` once its
 * bodies are built. ATTACK_MAX_REQUESTS bounds the whole run. With ATTACK_KIND=base64 it sends
 * only count_tokens of random base64 (about twenty times slower to count per character than
 * prose), ATTACK_BYTES each (8 MiB), ATTACK_BODIES distinct bodies (8).
 */
import { randomBytes } from "node:crypto";

const base = process.env.ATTACK_BASE!;
const key = process.env.ATTACK_KEY!;
const model = process.env.ATTACK_MODEL ?? "glm-4.6";
const maxRequests = Number(process.env.ATTACK_MAX_REQUESTS ?? 400);
const concurrency = Number(process.env.ATTACK_CONCURRENCY ?? 2);

const kind = process.env.ATTACK_KIND ?? "mixed";
const texts = kind === "base64" ? [] : ["a".repeat(120_000), "a".repeat(8 * 1024 * 1024 - 200)];
const enc = new TextEncoder();
const targets: { path: string; body: Uint8Array<ArrayBuffer> }[] = [];
if (kind === "base64") {
  const bytes = Number(process.env.ATTACK_BYTES ?? 8 * 1024 * 1024);
  for (let i = 0; i < Number(process.env.ATTACK_BODIES ?? 8); i++) {
    const text = randomBytes(Math.ceil((bytes * 3) / 4)).toString("base64").slice(0, bytes - 200);
    targets.push({ path: "/v1/messages/count_tokens", body: enc.encode(JSON.stringify({ model, messages: [{ role: "user", content: text }] })) });
  }
}
for (const text of texts) {
  const messages = [{ role: "user", content: text }];
  targets.push({ path: "/v1/messages/count_tokens", body: enc.encode(JSON.stringify({ model, messages })) });
  targets.push({ path: "/v1/chat/completions", body: enc.encode(JSON.stringify({ model, messages, max_tokens: 16 })) });
  targets.push({ path: "/v1/messages", body: enc.encode(JSON.stringify({ model, messages, max_tokens: 16 })) });
  targets.push({ path: "/v1/responses", body: enc.encode(JSON.stringify({ model, input: text, max_output_tokens: 16, store: false })) });
}

const statuses: Record<string, number> = {};
let sent = 0;
let next = 0;
let running = false;
/** Aborted by "stop" when ATTACK_ABORT_ON_STOP=1: the requests in flight are dropped, not awaited. */
let burst = new AbortController();
const abortOnStop = process.env.ATTACK_ABORT_ON_STOP === "1";
/** ATTACK_RETRY_AFTER=1: after a 429, wait its Retry-After before the next request (as SDK clients do). */
const honourRetryAfter = process.env.ATTACK_RETRY_AFTER === "1";

async function loop() {
  while (running && sent < maxRequests) {
    const t = targets[next++ % targets.length]!;
    sent++;
    let label: string;
    try {
      const res = await fetch(base + t.path, { method: "POST", headers: { "x-api-key": key, authorization: `Bearer ${key}`, "content-type": "application/json" }, body: t.body, signal: burst.signal });
      await res.arrayBuffer();
      label = `${t.path} ${res.status}`;
      const wait = Number(res.headers.get("retry-after"));
      if (honourRetryAfter && res.status === 429 && wait > 0) await Promise.race([Bun.sleep(wait * 1000), new Promise((r) => burst.signal.addEventListener("abort", r))]);
    } catch (e) {
      label = `${t.path} ${(e as Error).name}`;
    }
    statuses[label] = (statuses[label] ?? 0) + 1;
  }
}

const say = (obj: unknown) => process.stdout.write(JSON.stringify(obj) + "\n");
say({ ready: true });
let loops: Promise<void>[] = [];
for await (const line of console) {
  const command = line.trim();
  if (command === "go") {
    running = true;
    burst = new AbortController();
    loops = Array.from({ length: concurrency }, () => loop());
  } else if (command === "stop") {
    running = false;
    if (abortOnStop) burst.abort();
    await Promise.all(loops);
    say({ stopped: true, sent });
  } else if (command === "quit") {
    running = false;
    await Promise.all(loops);
    say({ sent, statuses });
    process.exit(0);
  }
}
