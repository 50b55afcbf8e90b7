/**
 * The real Claude Code CLI (pinned devDependency) against a real Switchyard: `claude -p` with no
 * model setting (so it asks for its own claude-* ids, which SWITCHYARD_MODEL_ALIASES maps), a
 * Bash tool round trip through the scripted upstream, and a ledger that charged exactly what the
 * upstream's usage said. Its request bodies are recorded as fixtures for the translator tests
 * (SWITCHYARD_RECORD_FIXTURES=1 rewrites them).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { startScriptedUpstream, type Script, type ScriptedUpstream } from "../support/scripted-upstream";
import { startCapturingProxy, type CapturingProxy } from "../support/capturing-proxy";
import { BIN, hermeticEnv, makeSandbox, runCli, type Sandbox } from "../support/agent-cli";
import { billingChecks } from "../support/billing-checks";
import { expectedChatCost } from "../support/expected-cost";
import { saveClientFixture } from "./fixtures";

const MODEL = "glm-4.6";
const FINAL = "Done: proof.txt holds round-trip-ok.";

let upstream: ScriptedUpstream;
let h: Harness;
let proxy: CapturingProxy;
let acct: { id: string; key: string };
let box: Sandbox;
/** The usage each upstream call reported, to price independently. */
const served: Script[] = [];

beforeAll(async () => {
  upstream = startScriptedUpstream();
  upstream.script((body) => {
    const messages = body.messages as { role: string; content: unknown }[];
    const hasBash = ((body.tools ?? []) as { function: { name: string } }[]).some((t) => t.function.name === "Bash");
    let s: Script;
    if (messages.some((m) => m.role === "tool")) s = { content: FINAL, promptTokens: 4_200, completionTokens: 14, cachedTokens: 4_000 };
    else if (hasBash) {
      s = {
        reasoning: "The user wants the command run.", promptTokens: 4_100, completionTokens: 40, cachedTokens: 3_072, reasoningTokens: 8,
        toolCalls: [{ name: "Bash", arguments: JSON.stringify({ command: "echo round-trip-ok > proof.txt && cat proof.txt", description: "Write the proof file" }) }],
      };
    } else s = { content: "ok", promptTokens: 50, completionTokens: 2 }; // side requests (titles, checks)
    served.push(s);
    return s;
  });
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url, SWITCHYARD_MODEL_ALIASES: JSON.stringify({ "claude-*": MODEL }) });
  acct = await h.account(10);
  proxy = startCapturingProxy(h.base);
  box = makeSandbox();
});

afterAll(async () => {
  proxy?.stop();
  await h?.stop();
  upstream?.stop();
  box?.dispose();
});

const bill = billingChecks(() => ({ h, accountId: acct.id, upstream }));

test("claude -p runs a Bash tool round trip and the ledger charges exactly the upstream's usage", async () => {
  const env = hermeticEnv(box.home, {
    ANTHROPIC_BASE_URL: proxy.origin,
    ANTHROPIC_AUTH_TOKEN: acct.key,
    CLAUDE_CONFIG_DIR: join(box.home, ".claude"),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1",
    API_TIMEOUT_MS: "60000",
    BASH_DEFAULT_TIMEOUT_MS: "20000",
  });
  let run: Awaited<ReturnType<typeof runCli>> | undefined;
  const charged = await bill.charged(async () => {
    run = await runCli([join(BIN, "claude"), "-p", "Run the command that writes proof.txt, then tell me what it says.", "--allowedTools", "Bash", "--output-format", "json"], {
      env, cwd: box.work, timeoutMs: 120_000,
    });
  });
  const r = run!;
  if (r.code !== 0) console.error(r.stdout.slice(-4000), r.stderr.slice(-4000));
  expect(r.timedOut).toBe(false);
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
  expect(out.is_error).toBe(false);
  expect(out.result).toContain(FINAL);

  // The tool really ran here, and its output went back to the model.
  expect(readFileSync(join(box.work, "proof.txt"), "utf8").trim()).toBe("round-trip-ok");
  const final = upstream.requests.find((b) => b.messages.some((m: { role: string }) => m.role === "tool"));
  expect(final).toBeDefined();
  const toolMessage = final!.messages.find((m: { role: string }) => m.role === "tool");
  expect(JSON.stringify(toolMessage.content)).toContain("round-trip-ok");

  // Billed as the alias's target, exactly what each upstream usage said (cached tokens at the model's cached price).
  const expected = served.reduce((n, s) => n + expectedChatCost(MODEL, s.promptTokens!, s.completionTokens!, false, { cached: s.cachedTokens }), 0);
  expect(charged).toBe(expected);
  const models = h.db.query("SELECT DISTINCT model FROM ledger_entries WHERE account_id = ? AND kind = 'charge'").all(acct.id) as { model: string }[];
  expect(models).toEqual([{ model: MODEL }]);
  // Cache reads reached the client in Anthropic's terms (summed over the turns).
  const cached = served.reduce((n, s) => n + (s.cachedTokens ?? 0), 0);
  expect(out.usage.cache_read_input_tokens).toBe(cached);

  // What current Claude Code sends, and why it used to fail: system entries inside messages,
  // adaptive thinking with output_config.effort, a defer_loading tool, claude-* model ids.
  const turns = proxy.captured.filter((c) => c.path.startsWith("/v1/messages") && !c.path.includes("count_tokens"));
  expect(turns.length).toBeGreaterThanOrEqual(2);
  for (const t of turns) expect(t.status).toBe(200);
  const main = turns.find((t) => t.body.tools?.some((x: { name: string }) => x.name === "Bash"))!;
  expect(main.body.model).toStartWith("claude-");
  expect(main.body.messages.some((m: { role: string }) => m.role === "system")).toBe(true);
  expect(main.body.thinking?.type).toBe("adaptive");
  expect(typeof main.body.output_config?.effort).toBe("string");
  expect(main.body.tools.some((x: { defer_loading?: boolean }) => x.defer_loading === true)).toBe(true);
  saveClientFixture("claude-code", turns.map((t) => t.body), { headers: main.headers });
}, 180_000);

test("the fixture recorded from Claude Code is on disk", () => {
  expect(existsSync(join(import.meta.dir, "../fixtures/clients/claude-code.json"))).toBe(true);
});
