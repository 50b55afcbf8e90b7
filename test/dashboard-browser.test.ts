/**
 * The dashboard in a real headless Chromium (puppeteer-core + @sparticuz/chromium, under Bun),
 * against a real server with a fake chat upstream and the tiny speech and embedding models:
 * signing in with a key and with the admin token, balance and spend equal to the ledger's, keys
 * created and revoked, credits added, each playground run once with its cost equal to its ledger
 * charge, the session cookie kept from scripts and storage, a forged cross-site POST refused, an
 * expired session sent back to sign-in, and pages usable at 360 px. Screenshots are written to
 * test/.tmp/dashboard/ as artefacts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { writeTinyKokoro } from "./support/tiny-kokoro";
import { writeEmbeddingModel } from "./support/embedding-fixture";
import { chat } from "./support/gateway-client";
import { settled } from "./support/ledger-state";
import { unitsToUsd } from "./support/expected-cost";
import { launchBrowser, openPage, screenshot, textOf } from "./support/browser";
import { usd } from "../src/dashboard/client/format";

let fake: FakeUpstream;
let h: Harness;
let modelsDir: string;
let alice: { id: string; key: string };
let bob: { id: string; key: string };
let bobRequest: string;
let browser: Browser;
let page: Page;
let problems: string[];
let attacker: ReturnType<typeof Bun.serve>;

/** Generous: a shared 2-core machine can be slow to drive a browser; none of this is a timing check. */
const BROWSER_TEST_MS = 30_000;
const db = () => h.db;
/** Units in the ledger → the text the page shows. */
const shown = (units: number) => usd(Number(unitsToUsd(units)));
const chargeOf = (requestId: string) => -(db().query("SELECT amount FROM ledger_entries WHERE request_id = ? AND kind = 'charge'").get(requestId) as { amount: number }).amount;
const spentUnits = (accountId: string) =>
  -(db().query("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger_entries WHERE account_id = ? AND kind = 'charge'").get(accountId) as { s: number }).s;

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(20);
  }
}

async function signInOnPage(p: Page, kind: "account" | "operator", secret: string): Promise<void> {
  await p.waitForSelector("#secret");
  if (kind === "operator") await p.click("#kind-operator");
  await p.type("#secret", secret);
  await p.click("#sign-in");
}

beforeAll(async () => {
  modelsDir = mkdtempSync(join(tmpdir(), "switchyard-dashboard-models-"));
  writeTinyKokoro(modelsDir);
  writeEmbeddingModel(modelsDir);
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_MODELS_DIR: modelsDir });
  alice = await h.account(25, "alice");
  bob = await h.account(5, "bob");
  fake.behave({ cachedTokens: 3 }); // the by-model table shows what the prompt cache served
  for (const model of ["glm-4.6", "kimi-k2-instruct", "glm-4.6"]) expect((await chat(h, alice.key, { model })).status).toBe(200);
  fake.behave({});
  const r = await chat(h, bob.key);
  bobRequest = r.headers.get("x-request-id")!;
  await r.text();
  await settled(h, alice.id);
  await until(() => h.server.services.engines.isLoaded("voice-82m") && h.server.services.engines.isLoaded("embedding-300m"));
  // Another origin on the same host: the "site" is the same (ports do not count), so the browser
  // does send the SameSite=Strict cookie with its requests; only the CSRF checks can stop them.
  const target = `${h.base}/dashboard/api/account/keys`;
  attacker = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () =>
      new Response(
        `<!doctype html><form id="f" method="POST" action="${target}" enctype="text/plain"><input name='{"name":"forged-form","x":"' value='"}'></form>
        <script>fetch(${JSON.stringify(target)}, { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" }, body: '{"name":"forged-fetch"}' })
          .finally(() => document.getElementById("f").submit());</script>`,
        { headers: { "content-type": "text/html" } },
      ),
  });
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  attacker?.stop(true);
  await h?.stop();
  fake?.stop();
  rmSync(modelsDir, { recursive: true, force: true });
});

describe("dashboard in a browser: account view", () => {
  test("a wrong key gets a clear message; the right key opens the account view, and the key is kept nowhere in the page", async () => {
    const res = await page.goto(h.base + "/dashboard");
    expect(res!.headers()["content-security-policy"]).toContain("script-src 'self'");
    await signInOnPage(page, "account", "sy-this-is-not-a-key");
    expect(await textOf(page, "#sign-in-error")).toContain("That API key is not valid");
    await page.$eval("#secret", (e) => ((e as HTMLInputElement).value = ""));
    await signInOnPage(page, "account", alice.key);
    await page.waitForSelector("#balance-available");

    const cookie = (await page.cookies()).find((c) => c.name === "sy_dashboard")!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/dashboard" });
    expect(cookie.expires * 1000).toBeGreaterThan(Date.now());
    const stored = await page.evaluate(() => ({ cookie: document.cookie, local: localStorage.length, session: sessionStorage.length, html: document.documentElement.outerHTML }));
    expect(stored.cookie).toBe("");
    expect(stored.local + stored.session).toBe(0);
    expect(stored.html).not.toContain(alice.key);
  }, BROWSER_TEST_MS);

  test("balance and spend on the page equal the ledger's; another account's requests are not there", async () => {
    const { balance, reserved } = h.balanceUnits(alice.id);
    expect(await textOf(page, "#balance-available")).toBe(shown(balance - reserved));
    expect(await textOf(page, "#balance-reserved")).toBe(shown(reserved));
    expect(await textOf(page, "#balance-total")).toBe(shown(balance));
    expect(await textOf(page, "#spend-period")).toBe(shown(spentUnits(alice.id)));
    expect(await textOf(page, "#spend-total")).toBe(shown(spentUnits(alice.id)));
    const perModel = db().query("SELECT model, -SUM(amount) AS units, SUM(cached_tokens) AS cached FROM ledger_entries WHERE account_id = ? AND kind = 'charge' GROUP BY model ORDER BY model").all(alice.id) as { model: string; units: number; cached: number }[];
    const rows = await page.$$eval("#by-model tbody tr", (trs) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[3]!.textContent, tr.children[6]!.textContent]));
    expect(perModel.map((m) => m.cached)).toEqual([6, 3]);
    expect(rows).toEqual(perModel.map((m) => [m.model, m.cached.toLocaleString("en-US"), shown(m.units)]));
    await page.waitForSelector("#chart-daily canvas");
    await page.waitForSelector("#chart-models canvas");
    const html = await page.content();
    expect(html).not.toContain(bobRequest.slice(0, 14));
    expect(html).not.toContain(bob.id);

    // A generation record from the recent requests, as GET /v1/generation gives it.
    await page.click("#recent tbody tr a");
    expect(await textOf(page, '#generation-record dd[data-field="Status"]')).toBe("completed");
    await screenshot(page, "account");
    await page.setViewport({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await screenshot(page, "account-360");
    await page.setViewport({ width: 1200, height: 900 });
  }, BROWSER_TEST_MS);

  test("keys: a new key is shown once and works; revoking it stops it", async () => {
    await page.click("#tab-keys");
    await page.type("#key-name", "from-browser");
    await page.click("#create-key");
    const key = await textOf(page, "#new-key");
    expect(key).toStartWith("sy-");
    const check = (k: string) => fetch(h.base + "/v1/key", { headers: { authorization: `Bearer ${k}` } });
    expect(((await (await check(key)).json()) as any).data.label).toBe("from-browser");
    const id = (db().query("SELECT id FROM api_keys WHERE name = 'from-browser'").get() as { id: string }).id;
    const revoke = `button[data-revoke="${id}"]`;
    await page.waitForSelector(revoke);
    // The key's own controls have a column: none set here.
    expect(await textOf(page, `tr[data-key-id="${id}"] td.key-controls`)).toBe("none");
    await page.click(revoke);
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "Confirm revoke", {}, revoke);
    await page.click(revoke);
    await page.waitForFunction((kid) => document.querySelector(`tr[data-key-id="${kid}"] td:nth-child(4)`)?.textContent === "revoked", {}, id);
    expect((await check(key)).status).toBe(401);
  }, BROWSER_TEST_MS);

  test("the playground: chat streams, speech plays, embeddings; each cost shown equals its ledger charge", async () => {
    await page.click("#tab-playground");
    const costShown = async (run: string) => {
      await page.waitForSelector("#playground-cost", { hidden: true });
      await page.click(run);
      await page.waitForSelector("#playground-cost");
      const id = await textOf(page, '#generation-record dd[data-field="Request id"]');
      expect(await textOf(page, "#playground-cost strong")).toBe(shown(chargeOf(id)));
      expect(chargeOf(id)).toBeGreaterThan(0);
      return id;
    };

    await page.waitForSelector("#chat-send:not([disabled])");
    const chatId = await costShown("#chat-send");
    expect(await textOf(page, "#chat-answer")).toBe("Hello from the fake upstream.");
    expect(db().query("SELECT endpoint FROM ledger_entries WHERE request_id = ?").get(chatId)).toEqual({ endpoint: "/v1/chat/completions" });

    await page.click("#tab-speech");
    await page.waitForSelector("#speech-send:not([disabled])");
    const speechId = await costShown("#speech-send");
    expect(await textOf(page, '#generation-record dd[data-field="Characters"]')).toBe("22");
    const duration = await page.$eval("#speech-audio", (a) => new Promise<number>((done) => {
      const el = a as HTMLAudioElement;
      if (el.readyState >= 1) done(el.duration);
      else el.addEventListener("loadedmetadata", () => done(el.duration));
    }));
    expect(duration).toBeGreaterThan(0);
    expect(db().query("SELECT characters FROM ledger_entries WHERE request_id = ?").get(speechId)).toEqual({ characters: 22 });

    await page.click("#tab-embeddings");
    await page.waitForSelector("#embeddings-send:not([disabled])");
    await costShown("#embeddings-send");
    expect(await textOf(page, "#embeddings-result p")).toStartWith("2 vectors of ");
    await screenshot(page, "playground");

    // The balance on the page follows the ledger after these charges.
    await settled(h, alice.id);
    const { balance, reserved } = h.balanceUnits(alice.id);
    await page.waitForFunction((want) => document.querySelector("#balance-available")?.textContent === want, {}, shown(balance - reserved));
  }, BROWSER_TEST_MS);

  test("a forged cross-site POST from another origin, which carries the session cookie, creates nothing", async () => {
    const before = (db().query("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?").get(alice.id) as { n: number }).n;
    const evil = await browser.newPage();
    await evil.goto(`http://127.0.0.1:${attacker.port}/`);
    await evil.waitForFunction(() => location.pathname.startsWith("/dashboard"), { timeout: 10_000 });
    const answer = JSON.parse(await evil.evaluate(() => document.body.innerText));
    expect(answer.error.code).toBe("cross_site_request");
    await evil.close();
    expect((db().query("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?").get(alice.id) as { n: number }).n).toBe(before);
    expect(db().query("SELECT COUNT(*) AS n FROM api_keys WHERE name LIKE 'forged%'").get()).toEqual({ n: 0 });
  }, BROWSER_TEST_MS);
});

describe("dashboard in a browser: operator view", () => {
  test("signing out, a wrong token's message, then the admin token opens the operator view", async () => {
    await page.click("#sign-out");
    expect(await textOf(page, "#sign-in-notice")).toBe("You are signed out.");
    await signInOnPage(page, "operator", "wrong-admin-token-0000");
    expect(await textOf(page, "#sign-in-error")).toBe("Incorrect admin token.");
    await page.$eval("#secret", (e) => ((e as HTMLInputElement).value = ""));
    await signInOnPage(page, "operator", ADMIN_TOKEN);
    await page.waitForSelector("#revenue-today"); // the overview comes first
    await page.click("#tab-accounts");
    await page.waitForSelector(`tr[data-account-id="${alice.id}"]`);
    const { balance, reserved } = h.balanceUnits(alice.id);
    expect(await textOf(page, `tr[data-account-id="${alice.id}"] td:nth-child(3)`)).toBe(shown(balance - reserved));
  }, BROWSER_TEST_MS);

  test("adding credits with a reason writes one ledger entry and shows the new balance", async () => {
    const before = h.balanceUnits(alice.id).balance;
    await page.click(`tr[data-account-id="${alice.id}"]`);
    await page.waitForSelector("#credits-form");
    await page.type('#credits-form input[name="amount"]', "5.000000001");
    await page.type('#credits-form input[name="reason"]', "browser top-up");
    await page.click('#credits-form button[type="submit"]');
    await page.waitForSelector('#account-detail [role="status"]');
    expect(h.balanceUnits(alice.id).balance - before).toBe(5_000_000_001);
    const entry = db().query("SELECT kind, amount, reason FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT 1").get(alice.id);
    expect(entry).toEqual({ kind: "credit", amount: 5_000_000_001, reason: "browser top-up" });
    const { balance, reserved } = h.balanceUnits(alice.id);
    expect(await textOf(page, "#detail-available")).toBe(shown(balance - reserved));
    expect(await textOf(page, "#ledger tbody tr td:nth-child(5)")).toBe("browser top-up");
    await screenshot(page, "operator");
    await page.setViewport({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await screenshot(page, "operator-360");
    await page.setViewport({ width: 1200, height: 900 });
  }, BROWSER_TEST_MS);

  test("service state: routes with breakers, local models loaded, request charts", async () => {
    await page.click("#tab-service");
    await page.waitForSelector("#routes tbody tr");
    const glm = await page.$$eval("#routes tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)).find((r) => r[0] === "glm-4.6"));
    expect(glm).toEqual(["glm-4.6", "glm-4.6#0", "default", "glm-4.6", "1", "", "closed", "0"]);
    const models = await page.$$eval("#local-models tbody tr", (trs) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[2]!.textContent]));
    expect(models).toEqual([["voice-82m", "loaded"], ["embedding-300m", "loaded"]]);
    for (const chart of ["#chart-rate", "#chart-errors", "#chart-latency"]) await page.waitForSelector(`${chart} canvas`);
    await screenshot(page, "service");
  }, BROWSER_TEST_MS);

  test("no script errors and no content-security-policy violations on any page", () => {
    // Expected refusals (wrong key, wrong token) log "Failed to load resource"; nothing else may.
    expect(problems.filter((p) => !p.includes("Failed to load resource"))).toEqual([]);
  }, BROWSER_TEST_MS);
});

describe("dashboard in a browser: session expiry", () => {
  test("an expired session returns to sign-in, and the server refuses its cookie", async () => {
    const short = await startHarness({ SWITCHYARD_DASHBOARD_SESSION_SECONDS: "2" });
    // A new page of the same browser (this Chromium runs single-process, where a second browser
    // context is not available); the other server's cookie it may send is unknown here.
    const p = await browser.newPage();
    try {
      const acct = await short.account(1);
      await p.goto(short.base + "/dashboard");
      await signInOnPage(p, "account", acct.key);
      await p.waitForSelector("#balance-available");
      expect(await textOf(p, "#sign-in-notice")).toBe("Your session has expired. Sign in again.");
      const status = await p.evaluate(() => fetch("/dashboard/api/account").then((r) => r.status));
      expect(status).toBe(401);
    } finally {
      await p.close();
      await short.stop();
    }
  }, BROWSER_TEST_MS);
});

describe("dashboard in a browser: a key with limits", () => {
  test("its session shows its own key read-only (no create or revoke) and offers only its models in the playground", async () => {
    // A server of its own: another origin, so this session's cookie leaves the main page's alone.
    const other = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
    const { page: p, problems: seen } = await openPage(browser);
    try {
      const acct = await other.account(5);
      const limited = (await other.admin("POST", `/admin/accounts/${acct.id}/keys`, { name: "limited", limit: 1, models: ["glm-4.6"] })).body;
      await p.goto(other.base + "/dashboard");
      await signInOnPage(p, "account", limited.key);
      await p.waitForSelector("#balance-available");
      await p.click("#tab-keys");
      await p.waitForSelector("#keys-read-only");
      expect(await p.$("#create-key")).toBeNull();
      expect(await p.$$eval("#keys tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-key-id")))).toEqual([limited.id]);
      expect(await p.$("button[data-revoke]")).toBeNull();
      expect(await textOf(p, `tr[data-key-id="${limited.id}"] td.key-controls`)).toContain("glm-4.6");
      await p.click("#tab-playground");
      await p.waitForSelector("#chat-send:not([disabled])");
      expect(await p.$$eval('select[name="model"] option', (os) => os.map((o) => o.textContent))).toEqual(["glm-4.6"]);
      expect(await textOf(p, "#playground-allowed")).toContain("glm-4.6");
      await screenshot(p, "account-limited-key");
      expect(seen.filter((x) => !x.includes("Failed to load resource"))).toEqual([]);
    } finally {
      await p.close();
      await other.stop();
    }
  }, BROWSER_TEST_MS);
});

describe("dashboard in a browser: a language tag Intl rejects", () => {
  test("with navigator.language 'en-US@posix' (headless Chromium under a POSIX locale) the page still renders, money included", async () => {
    const other = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
    const { page: p, problems: seen } = await openPage(browser);
    try {
      const acct = await other.account("12.5");
      expect((await chat(other, acct.key)).status).toBe(200);
      await settled(other, acct.id);
      // What Chromium reports under LANG=C; Intl.NumberFormat("en-US@posix") throws RangeError.
      await p.evaluateOnNewDocument(() => {
        Object.defineProperty(Navigator.prototype, "language", { get: () => "en-US@posix" });
        Object.defineProperty(Navigator.prototype, "languages", { get: () => ["en-US@posix"] });
      });
      await p.goto(other.base + "/dashboard");
      expect(await p.evaluate(() => navigator.language)).toBe("en-US@posix");
      await signInOnPage(p, "account", acct.key);
      await p.waitForSelector("#balance-available");
      await p.waitForSelector("#chart-daily canvas");
      const { balance, reserved } = other.balanceUnits(acct.id);
      expect(await textOf(p, "#balance-available")).toBe(shown(balance - reserved));
      expect(await textOf(p, "#balance-total")).toBe(shown(balance));
      expect(await textOf(p, "#balance-total")).toMatch(/^\$12\.\d\d$/);
      expect(await textOf(p, "#spend-total")).toMatch(/^\$0\.0000\d+$/);
      expect(seen.filter((x) => !x.includes("Failed to load resource"))).toEqual([]);
    } finally {
      await p.close();
      await other.stop();
    }
  }, BROWSER_TEST_MS);
});
