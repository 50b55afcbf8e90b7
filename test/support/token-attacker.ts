/**
 * A hostile client as its own process (its work must not share an event loop with the client
 * whose latency a test measures): it sends texts that are costly to tokenize — 120,000 identical
 * characters and 8 MB bodies — to count_tokens, chat completions, Messages and Responses, with
 * ATTACK_CONCURRENCY requests in flight, until ATTACK_MAX_REQUESTS were sent or ATTACK_MS passed.
 * Prints `{"ready":true}` once its bodies are built, then waits for a line on stdin to start, and
 * prints a summary line `{"sent":…, "statuses":{…}}` when done.
 */
export {};

const base = process.env.ATTACK_BASE!;
const key = process.env.ATTACK_KEY!;
const model = process.env.ATTACK_MODEL ?? "glm-4.6";
const maxRequests = Number(process.env.ATTACK_MAX_REQUESTS ?? 200);
const durationMs = Number(process.env.ATTACK_MS ?? 10_000);
const concurrency = Number(process.env.ATTACK_CONCURRENCY ?? 4);

const texts = ["a".repeat(120_000), "a".repeat(8 * 1024 * 1024 - 200)];
const enc = new TextEncoder();
const targets: { path: string; body: Uint8Array<ArrayBuffer> }[] = [];
for (const text of texts) {
  const messages = [{ role: "user", content: text }];
  targets.push({ path: "/v1/messages/count_tokens", body: enc.encode(JSON.stringify({ model, messages })) });
  targets.push({ path: "/v1/chat/completions", body: enc.encode(JSON.stringify({ model, messages, max_tokens: 16 })) });
  targets.push({ path: "/v1/messages", body: enc.encode(JSON.stringify({ model, messages, max_tokens: 16 })) });
  targets.push({ path: "/v1/responses", body: enc.encode(JSON.stringify({ model, input: text, max_output_tokens: 16, store: false })) });
}

if (process.env.ATTACK_ONLY) {
  const keep = process.env.ATTACK_ONLY.split(",").map(Number);
  const kept = targets.filter((_, i) => keep.includes(i));
  targets.length = 0;
  targets.push(...kept);
}
process.stdout.write(JSON.stringify({ ready: true }) + "\n");
for await (const _ of console) break;

const statuses: Record<string, number> = {};
let sent = 0;
const deadline = Date.now() + durationMs;
async function loop(offset: number) {
  for (let i = offset; sent < maxRequests && Date.now() < deadline; i += concurrency) {
    const t = targets[i % targets.length]!;
    sent++;
    let label: string;
    try {
      const res = await fetch(base + t.path, { method: "POST", headers: { "x-api-key": key, authorization: `Bearer ${key}`, "content-type": "application/json" }, body: t.body });
      await res.arrayBuffer();
      label = `${t.path} ${res.status}`;
    } catch (e) {
      label = `${t.path} ${(e as Error).name}`;
    }
    statuses[label] = (statuses[label] ?? 0) + 1;
  }
}
await Promise.all(Array.from({ length: concurrency }, (_, i) => loop(i)));
process.stdout.write(JSON.stringify({ sent, statuses }) + "\n");
