/**
 * The operator's pages and the new account pages in a real headless Chromium (see
 * test/support/browser.ts), against a real server with a fake chat upstream: the overview's
 * revenue and the accounts list's spend equal to the ledger's, the request log filtered, paged
 * and exported, the models page with a route tested, the connect panel, and the multi-turn
 * playground with a system prompt, temperature, max tokens and "view code". Screenshots go to
 * test/.tmp/screenshots/ (git-ignored).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "puppeteer-core";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat } from "./support/gateway-client";
import { settled } from "./support/ledger-state";
import { unitsToUsd } from "./support/expected-cost";
import { launchBrowser, openPage, PAGE_SCREENSHOT_DIR, screenshot, textOf } from "./support/browser";
import { usd } from "../src/dashboard/client/format";

let fake: FakeUpstream;
let h: Harness;
let alice: { id: string; key: string };
let bob: { id: string; key: string };
let browser: Browser;
let page: Page;
let problems: string[];

/** Generous: a shared 2-core machine can be slow to drive a browser; none of this is a timing check. */
const BROWSER_TEST_MS = 30_000;
const shown = (units: number) => usd(Number(unitsToUsd(units)));
const spent = (accountId: string) =>
  -(h.db.query("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger_entries WHERE account_id = ? AND kind = 'charge'").get(accountId) as { s: number }).s;
const shot = (name: string) => screenshot(page, name, PAGE_SCREENSHOT_DIR);
const rowCount = (selector: string) => page.$$eval(selector, (rows) => rows.length);

async function signInOnPage(kind: "account" | "operator", secret: string): Promise<void> {
  await page.waitForSelector("#secret");
  if (kind === "operator") await page.click("#kind-operator");
  await page.type("#secret", secret);
  await page.click("#sign-in");
}

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  alice = await h.account(25, "alice");
  bob = await h.account(5, "bob");
  for (const [key, model] of [[alice.key, "glm-4.6"], [alice.key, "kimi-k2-instruct"], [bob.key, "glm-4.6"]] as const) {
    const r = await chat(h, key, { model });
    expect(r.status).toBe(200);
    await r.text();
  }
  expect((await chat(h, bob.key, { model: "no-such-model" })).status).toBe(404);
  await settled(h, alice.id);
  await settled(h, bob.id);
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.stop();
  fake?.stop();
});

describe("operator pages in a browser", () => {
  test("overview: revenue today, 7 and 30 days equal the ledger's sum across accounts; top models and accounts", async () => {
    await page.goto(h.base + "/dashboard");
    await signInOnPage("operator", ADMIN_TOKEN);
    const total = spent(alice.id) + spent(bob.id);
    for (const id of ["#revenue-today", "#revenue-7d", "#revenue-30d"]) expect(await textOf(page, id)).toBe(shown(total));
    await page.waitForSelector("#top-models tbody tr");
    expect(await page.$$eval("#top-models tbody tr td:first-child", (tds) => tds.map((td) => td.textContent).sort())).toEqual(["glm-4.6", "kimi-k2-instruct"]);
    expect(await rowCount("#top-accounts tbody tr")).toBe(2);
    await shot("operator-overview");
  }, BROWSER_TEST_MS);

  test("accounts list: each account's spend over 30 days", async () => {
    await page.click("#tab-accounts");
    await page.waitForSelector(`tr[data-account-id="${alice.id}"]`);
    expect(await textOf(page, `tr[data-account-id="${alice.id}"] td:nth-child(6)`)).toBe(shown(spent(alice.id)));
    expect(await textOf(page, `tr[data-account-id="${bob.id}"] td:nth-child(6)`)).toBe(shown(spent(bob.id)));
    await shot("operator-accounts");
  }, BROWSER_TEST_MS);

  test("request log: every request, filtered by model and status, and a CSV export with the same filters", async () => {
    await page.click("#tab-requests");
    await page.waitForFunction(() => document.querySelectorAll("#request-log tbody tr").length === 4);
    await shot("operator-requests");
    // A click on a key narrows the log to that key's requests (the newest is bob's: his two).
    await page.click('#request-log tbody tr:first-child button[data-filter="key"]');
    await page.waitForFunction(() => document.querySelectorAll("#request-log tbody tr").length === 2);
    expect(await page.$eval('#log-filters input[name="key"]', (e) => (e as HTMLInputElement).value)).toMatch(/^key_/);
    await page.$eval('#log-filters input[name="key"]', (e) => ((e as HTMLInputElement).value = ""));
    await page.type('#log-filters input[name="model"]', "kimi-k2-instruct");
    await page.click('#log-filters button[type="submit"]');
    await page.waitForFunction(() => document.querySelectorAll("#request-log tbody tr").length === 1);
    expect(await textOf(page, "#request-log tbody tr td:nth-child(4)")).toBe("kimi-k2-instruct");
    await page.$eval('#log-filters input[name="model"]', (e) => ((e as HTMLInputElement).value = ""));
    await page.select('#log-filters select[name="status"]', "failed");
    await page.click('#log-filters button[type="submit"]');
    await page.waitForFunction(() => [...document.querySelectorAll("#request-log tbody tr td:nth-child(6)")].map((td) => td.textContent).join() === "failed 404");
    const href = await page.$eval("#log-csv", (a) => (a as HTMLAnchorElement).getAttribute("href"));
    expect(href).toBe("/dashboard/api/operator/requests.csv?status=failed");
    const csv = await page.evaluate((u) => fetch(u!).then((r) => r.text()), href);
    expect(csv.trimEnd().split("\r\n")).toHaveLength(2);
    expect(csv).toContain(",failed,404,");
  }, BROWSER_TEST_MS);

  test("models page: prices, context windows, routes with breakers; testing a route shows its status and time", async () => {
    await page.click("#tab-models");
    await page.waitForSelector('#models tr[data-model="glm-4.6"]');
    expect(await textOf(page, '#models tr[data-model="glm-4.6"] td:nth-child(3)')).toBe("live");
    const before = fake.requests.length;
    await page.waitForSelector('#model-routes tr[data-route="glm-4.6#0"] .route-test'); // the routes load beside the catalog
    await page.click('#model-routes tr[data-route="glm-4.6#0"] .route-test');
    await page.waitForFunction(() => /^ok · HTTP 200 · \d+ ms$/.test(document.querySelector('#model-routes tr[data-route="glm-4.6#0"] .route-result')?.textContent?.trim() ?? ""));
    expect(fake.requests.length).toBe(before + 1);
    expect(await textOf(page, '#model-routes tr[data-route="glm-4.6#0"] td:nth-child(7)')).toBe("closed");
    await shot("operator-models");
  }, BROWSER_TEST_MS);

  test("connect panel: the base URL and snippets for a live model; a pasted key goes into the code, never otherwise", async () => {
    await page.click("#tab-connect");
    await page.waitForFunction(() => document.querySelector("#connect-base-url")?.textContent !== "…");
    expect(await textOf(page, "#connect-base-url")).toBe(`${h.base}/v1`);
    await page.waitForSelector("#connect-code code");
    expect(await textOf(page, "#connect-code code")).toContain(`curl ${h.base}/v1/chat/completions`);
    expect(await textOf(page, "#connect-code code")).toContain("$SWITCHYARD_API_KEY");
    await page.click("#connect-code-python");
    expect(await textOf(page, "#connect-code code")).toContain(`OpenAI(base_url="${h.base}/v1", api_key=os.environ["SWITCHYARD_API_KEY"])`);
    await page.type("#connect-key", "sy-pasted-example");
    await page.click("#connect-code-js");
    expect(await textOf(page, "#connect-code code")).toContain('apiKey: "sy-pasted-example"');
    await shot("operator-connect");
  }, BROWSER_TEST_MS);
});

describe("account pages in a browser", () => {
  test("the playground: live models only, the first by default; two turns with a system prompt, temperature and max tokens; view code", async () => {
    await page.click("#sign-out");
    await signInOnPage("account", alice.key);
    await page.waitForSelector("#balance-available");
    await page.click("#tab-playground");
    await page.waitForSelector("#chat-send:not([disabled])");
    const live = ((await (await fetch(h.base + "/v1/models")).json()) as any).data.filter((m: any) => m.type === "chat" && m.service_tier === "default").map((m: any) => m.id);
    expect(await page.$$eval('#chat-form select[name="model"] option', (os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(live);
    expect(await page.$eval('#chat-form select[name="model"]', (s) => (s as HTMLSelectElement).value)).toBe(live[0]);

    await page.type('#chat-form textarea[name="system"]', "You are terse.");
    await page.type('#chat-form input[name="temperature"]', "0.3");
    await page.$eval('#chat-form input[name="max_tokens"]', (e) => ((e as HTMLInputElement).value = ""));
    await page.type('#chat-form input[name="max_tokens"]', "64");
    const sent = fake.requests.length;
    await page.click("#chat-send");
    await page.waitForFunction(() => document.querySelectorAll('#chat-turns li[data-role="assistant"]').length === 1 && !document.querySelector("#chat-send")?.hasAttribute("disabled"));
    await page.$eval('#chat-form textarea[name="prompt"]', (e) => ((e as HTMLTextAreaElement).value = ""));
    await page.type('#chat-form textarea[name="prompt"]', "And again?");
    await page.click("#chat-send");
    await page.waitForFunction(() => document.querySelectorAll('#chat-turns li[data-role="assistant"]').length === 2 && !document.querySelector("#chat-send")?.hasAttribute("disabled"));
    expect(await textOf(page, '#chat-turns li[data-role="assistant"]:last-child .answer')).toBe("Hello from the fake upstream.");

    const second = fake.requests[sent + 1]!;
    expect(second.messages.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(second.messages[0].content).toBe("You are terse.");
    expect(second.messages[3].content).toBe("And again?");
    expect(second.temperature).toBe(0.3);
    expect(second.max_tokens).toBe(64);

    await page.click("#chat-view-code");
    await page.waitForSelector("#chat-code code");
    const curl = await textOf(page, "#chat-code code");
    expect(curl).toContain('"temperature": 0.3');
    expect(curl).toContain('"max_tokens": 64');
    expect(curl).toContain("You are terse.");
    expect(curl).not.toContain(alice.key);
    await shot("playground-chat");
  }, BROWSER_TEST_MS);

  test("the account's connect panel, and no script errors or policy violations anywhere", async () => {
    await page.click("#tab-connect");
    await page.waitForFunction(() => document.querySelector("#connect-base-url")?.textContent !== "…");
    expect(await textOf(page, "#connect-base-url")).toBe(`${h.base}/v1`);
    await page.waitForSelector("#connect-code code");
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(alice.key);
    await shot("account-connect");
    await page.setViewport({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await page.setViewport({ width: 1200, height: 900 });
    expect(problems.filter((p) => !p.includes("Failed to load resource"))).toEqual([]);
  }, BROWSER_TEST_MS);
});
