/**
 * Another account's first-byte latency while one account attacks the tokenizer (issue 20), both
 * measured in this run. Account A (its own process, default limits) keeps 32 count_tokens of
 * 8 MiB random base64 in flight; account B, one request at a time, sends a streamed /v1/messages
 * with a 40 KB system prompt (first byte: message_start) and a 40 KB chat (first byte of the
 * reply; the upstream sends no usage, so the gateway counts it). Unloaded and attacked phases
 * alternate in blocks so both see the same background load. Target: attacked ≤ 2x unloaded.
 *
 *   BENCH_BLOCKS (4)  BENCH_SAMPLES (15 per kind and phase in each block)  BENCH_ATTACK_CONCURRENCY (32)
 *   BENCH_ATTACK_BYTES (8 MiB)  BENCH_RAMP_MS (1500: the attack's first bodies arrive before sampling)
 *   BENCH_ATTACK_RETRY_AFTER (1: after a 429 the attacker waits its Retry-After, as the SDKs do;
 *   0: it retries at once, a flood of uploads the server must take in whatever it answers)
 */
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { benchAccount, BENCH_ADMIN_TOKEN, BUN, ROOT, startGatewayProcess, startUpstreamProcess } from "./lib/processes";
import { fmt } from "./lib/load";

const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 4);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 15);
const CONCURRENCY = Number(process.env.BENCH_ATTACK_CONCURRENCY ?? 32);
const BYTES = Number(process.env.BENCH_ATTACK_BYTES ?? 8 * 1024 * 1024);
const RAMP_MS = Number(process.env.BENCH_RAMP_MS ?? 1500);
/** Whether the attacker waits a 429's Retry-After before its next request, as SDK clients do (1), or retries at once (0). */
const RETRY_AFTER = (process.env.BENCH_ATTACK_RETRY_AFTER ?? "1") === "1";
const MODEL = "glm-4.6";

const upstream = await startUpstreamProcess({ omitUsage: true });
const gateway = await startGatewayProcess({ SWITCHYARD_UPSTREAM_URL: upstream.url });
const SYSTEM_40K = "You are a careful assistant. Follow the house style guide in every answer. ".repeat(540);

/** The attacker's process, killed whatever happens. */
const children: { kill(): void }[] = [];
try {
  const a = await benchAccount(gateway.url, "1000");
  const b = await benchAccount(gateway.url, "1000");
  // B sends a few hundred requests: its rate limit is not what is measured. A keeps the defaults.
  await fetch(`${gateway.url}/admin/accounts/${b.id}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ rate_limit_rpm: 1_000_000 }),
  });
  const evil = Bun.spawn([BUN, join(ROOT, "test/support/token-attacker.ts")], {
    env: { ...process.env, ATTACK_BASE: gateway.url, ATTACK_KEY: a.key, ATTACK_KIND: "base64", ATTACK_BYTES: String(BYTES), ATTACK_CONCURRENCY: String(CONCURRENCY), ATTACK_MAX_REQUESTS: "1000000", ATTACK_ABORT_ON_STOP: "1", ATTACK_RETRY_AFTER: RETRY_AFTER ? "1" : "0" },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  children.push(evil);
  const lines = (async function* () {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of evil.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        yield JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    }
  })();
  const command = async (line: string) => {
    evil.stdin.write(line + "\n");
    evil.stdin.flush();
    return (await lines.next()).value;
  };
  await lines.next(); // ready: its bodies are built

  const headers = { "x-api-key": b.key, authorization: `Bearer ${b.key}`, "anthropic-version": "2023-06-01", "content-type": "application/json" };
  const streamBody = JSON.stringify({ model: MODEL, system: SYSTEM_40K, messages: [{ role: "user", content: "Summarise the guide." }], max_tokens: 32, stream: true });
  const chatBody = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: SYSTEM_40K }], max_tokens: 32 });
  /** Milliseconds to the first byte of the body, then the rest is read. */
  const firstByte = async (path: string, body: string): Promise<number> => {
    const started = performance.now();
    const res = await fetch(gateway.url + path, { method: "POST", headers, body });
    const reader = res.body!.getReader();
    await reader.read();
    const ms = performance.now() - started;
    while (!(await reader.read()).done);
    if (res.status !== 200) throw new Error(`B's ${path} answered ${res.status}`);
    return ms;
  };
  const samples = { unloaded: { stream: [] as number[], chat: [] as number[] }, attacked: { stream: [] as number[], chat: [] as number[] } };
  const sample = async (into: { stream: number[]; chat: number[] }, n: number) => {
    for (let i = 0; i < n; i++) {
      into.stream.push(await firstByte("/v1/messages", streamBody));
      into.chat.push(await firstByte("/v1/chat/completions", chatBody));
    }
  };

  await sample({ stream: [], chat: [] }, 20); // warm-up: JIT, connections, the token workers
  for (let block = 0; block < BLOCKS; block++) {
    await sample(samples.unloaded, SAMPLES);
    evil.stdin.write("go\n");
    evil.stdin.flush();
    await Bun.sleep(RAMP_MS);
    await sample(samples.attacked, SAMPLES);
    await command("stop");
    const last = (xs: number[]) => fmt(xs[xs.length - 1]!);
    console.error(`block ${block + 1}/${BLOCKS}: last samples unloaded ${last(samples.unloaded.stream)} / ${last(samples.unloaded.chat)} ms, attacked ${last(samples.attacked.stream)} / ${last(samples.attacked.chat)} ms (stream / chat)`);
  }
  const attack = (await command("quit")) as { sent: number; statuses: Record<string, number> };

  const q = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.ceil(xs.length * p) - 1)]!;
  console.log(`\n## token attack (${new Date().toISOString()})`);
  console.log(
    `setup: fake upstream (no usage), gateway (defaults) and two clients, each in its own process, on ${availableParallelism()} CPU(s), load average ${loadavg()[0]!.toFixed(2)}; ` +
      `A: ${CONCURRENCY} count_tokens of ${fmt(BYTES / 1024 / 1024, 0)} MiB random base64 in flight, ${RETRY_AFTER ? "waiting Retry-After after a 429" : "retrying at once after a 429"}; B: one request at a time; ` +
      `${BLOCKS} blocks of ${SAMPLES} samples per kind and phase.`,
  );
  console.log("");
  console.log("| B's request | phase | samples | p50 ms | p90 ms | max ms |");
  console.log("|---|---|---:|---:|---:|---:|");
  for (const kind of ["stream", "chat"] as const) {
    for (const phase of ["unloaded", "attacked"] as const) {
      const xs = samples[phase][kind];
      const name = kind === "stream" ? "streamed /v1/messages, 40 KB system (message_start)" : "40 KB chat (first byte)";
      console.log(`| ${name} | ${phase} | ${xs.length} | ${fmt(q(xs, 0.5))} | ${fmt(q(xs, 0.9))} | ${fmt(q(xs, 1))} |`);
    }
  }
  console.log("");
  for (const kind of ["stream", "chat"] as const) {
    const ratio = q(samples.attacked[kind], 0.5) / q(samples.unloaded[kind], 0.5);
    const ratio90 = q(samples.attacked[kind], 0.9) / q(samples.unloaded[kind], 0.9);
    console.log(`${kind}: attacked/unloaded p50 ${fmt(ratio, 2)}, p90 ${fmt(ratio90, 2)} (target ≤ 2: ${ratio <= 2 ? "met" : "MISSED"})`);
  }
  console.log(`attacker sent ${attack.sent}: ${JSON.stringify(attack.statuses)}`);
} finally {
  for (const c of children) c.kill();
  await gateway.stop();
  await upstream.stop();
}
