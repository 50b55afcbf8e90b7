/**
 * The real Codex CLI (pinned devDependency, native binary from its platform package) against a
 * real Switchyard with its default tool set — the `multi_agent_v1` namespace tool and the hosted
 * `web_search` tool included — and an `exec_command` round trip through the scripted upstream.
 * The final text, the file the command wrote, the header naming the ignored hosted tool, and a
 * ledger that charged exactly the upstream's usage are checked. Its request bodies are recorded
 * as fixtures for the translator tests.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { startScriptedUpstream, type Script, type ScriptedUpstream } from "../support/scripted-upstream";
import { startCapturingProxy, type CapturingProxy } from "../support/capturing-proxy";
import { BIN, hermeticEnv, makeSandbox, runCli, type Sandbox } from "../support/agent-cli";
import { billingChecks } from "../support/billing-checks";
import { expectedChatCost } from "../support/expected-cost";
import { saveClientFixture } from "./fixtures";

const MODEL = "glm-4.6";
const FINAL = "Finished: proof.txt says round-trip-ok.";

let upstream: ScriptedUpstream;
let h: Harness;
let proxy: CapturingProxy;
let acct: { id: string; key: string };
let box: Sandbox;
const served: Script[] = [];

beforeAll(async () => {
  upstream = startScriptedUpstream();
  upstream.script((body) => {
    const messages = body.messages as { role: string }[];
    const hasExec = ((body.tools ?? []) as { function: { name: string } }[]).some((t) => t.function.name === "exec_command");
    let s: Script;
    if (messages.some((m) => m.role === "tool")) s = { reasoning: "The command worked.", content: FINAL, promptTokens: 6_000, completionTokens: 25, cachedTokens: 5_120, reasoningTokens: 5 };
    else if (hasExec) {
      s = {
        reasoning: "I will run the command.", promptTokens: 5_900, completionTokens: 33, reasoningTokens: 6,
        toolCalls: [{ name: "exec_command", arguments: JSON.stringify({ cmd: "echo round-trip-ok > proof.txt && cat proof.txt" }) }],
      };
    } else s = { content: "ok", promptTokens: 40, completionTokens: 2 };
    served.push(s);
    return s;
  });
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url });
  acct = await h.account(10);
  proxy = startCapturingProxy(h.base);
  box = makeSandbox();
  const codexHome = join(box.home, ".codex");
  mkdirSync(codexHome, { recursive: true });
  // The README's recipe, plus switches that keep a test run off the network.
  writeFileSync(join(codexHome, "config.toml"), [
    `model = "${MODEL}"`,
    `model_provider = "switchyard"`,
    `check_for_update_on_startup = false`,
    ``,
    `[model_providers.switchyard]`,
    `name = "Switchyard"`,
    `base_url = "${proxy.origin}/v1"`,
    `env_key = "SWITCHYARD_API_KEY"`,
    `wire_api = "responses"`,
    `request_max_retries = 0`,
    `stream_max_retries = 0`,
    ``,
    `[analytics]`,
    `enabled = false`,
    ``,
  ].join("\n"));
});

afterAll(async () => {
  proxy?.stop();
  await h?.stop();
  upstream?.stop();
  box?.dispose();
});

const bill = billingChecks(() => ({ h, accountId: acct.id, upstream }));

test("codex exec runs an exec_command round trip with the default tools and the ledger charges exactly the upstream's usage", async () => {
  const env = hermeticEnv(box.home, { CODEX_HOME: join(box.home, ".codex"), SWITCHYARD_API_KEY: acct.key, RUST_LOG: "error" });
  let run: Awaited<ReturnType<typeof runCli>> | undefined;
  const charged = await bill.charged(async () => {
    run = await runCli([join(BIN, "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "Run the command that writes proof.txt and report what it says."], {
      env, cwd: box.work, timeoutMs: 120_000,
    });
  });
  const r = run!;
  if (r.code !== 0) console.error(r.stdout.slice(-4000), r.stderr.slice(-4000));
  expect(r.timedOut).toBe(false);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(FINAL);

  // The command really ran here, and its output went back to the model.
  expect(readFileSync(join(box.work, "proof.txt"), "utf8").trim()).toBe("round-trip-ok");
  const final = upstream.requests.find((b) => b.messages.some((m: { role: string }) => m.role === "tool"));
  expect(JSON.stringify(final!.messages.find((m: { role: string }) => m.role === "tool").content)).toContain("round-trip-ok");

  const expected = served.reduce((n, s) => n + expectedChatCost(MODEL, s.promptTokens!, s.completionTokens!, false, { cached: s.cachedTokens }), 0);
  expect(charged).toBe(expected);

  // Codex's default request: a namespace tool and the hosted web_search tool. The namespace's
  // function tools reached the upstream flattened; web_search did not, and the header says so.
  const turns = proxy.captured.filter((c) => c.path === "/v1/responses");
  expect(turns.length).toBeGreaterThanOrEqual(2);
  for (const t of turns) expect(t.status).toBe(200);
  const first = turns[0]!;
  const namespace = first.body.tools.find((t: { type: string }) => t.type === "namespace");
  expect(namespace).toBeDefined();
  expect(first.body.tools.some((t: { type: string }) => t.type === "web_search")).toBe(true);
  expect(first.responseHeaders["x-switchyard-ignored-tools"]).toContain("web_search");
  const upstreamNames = upstream.requests[0]!.tools.map((t: { function: { name: string } }) => t.function.name);
  for (const inner of namespace.tools) expect(upstreamNames).toContain(inner.name);
  expect(upstreamNames).not.toContain("web_search");
  saveClientFixture("codex", turns.map((t) => t.body), { headers: first.headers });
}, 180_000);
