/**
 * Editing models, prices, upstreams and routes on the operator's models page in a real headless
 * Chromium (test/support/browser.ts), against a real server with fake chat upstreams: a model added
 * with its prices is live in /v1/models; its price changed shows on the page and in /v1/models;
 * disabled, it leaves /v1/models; an upstream added with a key that never comes back to the page;
 * routes set (a 400 shown under the field it names), the route tested against the fake engine,
 * the model taken offline and its written routes removed. Screenshots go to test/.tmp/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "puppeteer-core";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { launchBrowser, openPage, PAGE_SCREENSHOT_DIR, screenshot, textOf } from "./support/browser";

const BROWSER_TEST_MS = 30_000;
const MODEL = "acme/chat-1";
const KEY = "sk-engine-b-secret-never-on-the-page-42";
let fake: FakeUpstream;
let engine: FakeUpstream;
let h: Harness;
let browser: Browser;
let page: Page;
let problems: string[];

const shot = (name: string) => screenshot(page, name, PAGE_SCREENSHOT_DIR);
const row = `#models tr[data-model="${MODEL}"]`;
const cell = (n: number) => textOf(page, `${row} td:nth-child(${n})`);
const listed = async () => ((await (await fetch(h.base + "/v1/models")).json()) as any).data.find((m: any) => m.id === MODEL) ?? null;
const waitText = (selector: string, text: string) =>
  page.waitForFunction((s, t) => document.querySelector(s)?.textContent?.trim() === t, {}, selector, text);
async function typeInto(selector: string, text: string): Promise<void> {
  await page.$eval(selector, (e) => ((e as HTMLInputElement).value = ""));
  await page.type(selector, text);
}

beforeAll(async () => {
  fake = startFakeUpstream();
  engine = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser));
  await page.goto(h.base + "/dashboard");
  await page.waitForSelector("#secret");
  await page.click("#kind-operator");
  await page.type("#secret", ADMIN_TOKEN);
  await page.click("#sign-in");
  await page.waitForSelector("#tab-models");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.stop();
  fake?.stop();
  engine?.stop();
});

describe("editing the catalog on the operator's models page", () => {
  test("add a chat model with prices: it shows as admin, enabled and live, and /v1/models lists it", async () => {
    await page.click("#tab-models");
    await page.waitForSelector('#models tr[data-model="glm-4.6"]');
    expect(await textOf(page, '#models tr[data-model="glm-4.6"] td:nth-child(4)')).toBe("embedded");
    await page.click("#model-add");
    await page.waitForSelector("#model-form");
    await page.type('#model-form input[name="id"]', MODEL);
    await page.type('#model-form input[name="owned_by"]', "acme");
    await page.type('#model-form input[name="context_window"]', "32000");
    await page.type('#model-form input[name="max_output_tokens"]', "4096");
    await page.type('#model-form input[name="pricing.input_per_million"]', "0.25");
    await page.type('#model-form input[name="pricing.output_per_million"]', "1.10");
    await page.type('#model-form input[name="pricing.cached_input_per_million"]', "0.05");
    await page.click("#model-save");
    await page.waitForSelector(row);
    // Input, cached input, cache write (none set: the input price), output.
    expect([await cell(3), await cell(4), await cell(5), await cell(6), await cell(8), await cell(9), await cell(10), await cell(11)]).toEqual(["live", "admin", "yes", "32,000", "$0.25", "$0.05", "—", "$1.1"]);
    expect((await listed())!.pricing).toMatchObject({ input_per_million_tokens: "0.25", cached_input_per_million_tokens: "0.05" });
  }, BROWSER_TEST_MS);

  test("a bad price is shown under its field; a new price shows on the page and in /v1/models", async () => {
    await page.click(`${row} .model-edit`);
    await page.waitForSelector("#model-form");
    expect(await page.$eval('#model-form input[name="pricing.input_per_million"]', (e) => (e as HTMLInputElement).value)).toBe("0.25");
    await typeInto('#model-form input[name="pricing.input_per_million"]', "0.2.5");
    await page.click("#model-save");
    await page.waitForSelector('#model-form label[data-field="pricing.input_per_million"] .field-error');
    expect(await textOf(page, '#model-form label[data-field="pricing.input_per_million"] .field-error')).toContain("Invalid 'pricing.input_per_million'");
    // What was typed stays for fixing.
    expect(await page.$eval('#model-form input[name="pricing.input_per_million"]', (e) => (e as HTMLInputElement).value)).toBe("0.2.5");
    await shot("operator-models-edit");
    await typeInto('#model-form input[name="pricing.input_per_million"]', "0.30");
    await typeInto('#model-form input[name="context_window"]', "64000");
    await page.click("#model-save");
    await waitText(`${row} td:nth-child(8)`, "$0.3");
    expect(await cell(6)).toBe("64,000");
    expect((await h.admin("GET", `/admin/models/${MODEL}`)).body.pricing).toEqual({ input_per_million: 0.3, output_per_million: 1.1, cached_input_per_million: 0.05 });
    expect(JSON.stringify((await listed()).pricing)).toContain("0.3");
  }, BROWSER_TEST_MS);

  test("disable takes the model out of /v1/models; enable brings it back", async () => {
    await page.click(`${row} .model-toggle`);
    await waitText(`${row} td:nth-child(5)`, "disabled");
    expect(await cell(3)).toBe("not served");
    expect(await listed()).toBeNull();
    await shot("operator-models-disabled");
    await page.click(`${row} .model-toggle`);
    await waitText(`${row} td:nth-child(5)`, "yes");
    expect(await listed()).not.toBeNull();
  }, BROWSER_TEST_MS);

  test("add an upstream with a key: the page shows 'set', never the key, and the edit form leaves it empty", async () => {
    await page.click("#upstream-add");
    await page.waitForSelector("#upstream-form");
    await page.type('#upstream-form input[name="name"]', "engine-b");
    await page.type('#upstream-form input[name="base_url"]', engine.url);
    await page.type('#upstream-form input[name="key"]', KEY);
    await page.type('#upstream-form input[name="timeouts.connect_ms"]', "2000");
    await page.click("#upstream-save");
    await page.waitForSelector('#upstreams tr[data-upstream="engine-b"]');
    expect(await textOf(page, '#upstreams tr[data-upstream="engine-b"] td:nth-child(2)')).toBe("admin");
    expect(await textOf(page, '#upstreams tr[data-upstream="engine-b"] td:nth-child(4)')).toBe("set");
    expect(await textOf(page, '#upstreams tr[data-upstream="engine-b"] td:nth-child(5)')).toBe("2000 ms");
    await page.click('#upstreams tr[data-upstream="engine-b"] .upstream-edit');
    await page.waitForSelector("#upstream-form");
    expect(await page.$eval('#upstream-form input[name="key"]', (e) => [(e as HTMLInputElement).type, (e as HTMLInputElement).value])).toEqual(["password", ""]);
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(KEY);
    await shot("operator-upstreams");
    await page.click('#upstream-form button[type="button"]');
  }, BROWSER_TEST_MS);

  test("set the model's routes (a bad weight shown under its field), test the route against the fake engine, take it offline, remove the written routes", async () => {
    await page.click("#routes-set");
    await page.waitForSelector("#routes-form");
    await page.type('#routes-form input[name="model"]', MODEL);
    await page.select('#routes-form select[name="routes[0].upstream"]', "engine-b");
    await page.type('#routes-form input[name="routes[0].model"]', "acme-upstream");
    await page.click('#routes-form input[name="routes[0].pinned"]');
    await typeInto('#routes-form input[name="routes[0].weight"]', "-1");
    await page.click("#routes-save");
    await page.waitForSelector('#routes-form label[data-field="routes[0].weight"] .field-error');
    expect(await textOf(page, '#routes-form label[data-field="routes[0].weight"] .field-error')).toContain("Invalid 'routes[0].weight'");
    const typed = await page.$$eval('#routes-form input[name="model"], #routes-form select, #routes-form input[name^="routes[0]"]', (es) =>
      es.map((e) => ((e as HTMLInputElement).type === "checkbox" ? String((e as HTMLInputElement).checked) : (e as HTMLInputElement).value)));
    expect(typed).toEqual([MODEL, "engine-b", "acme-upstream", "-1", "false", "true"]);
    await shot("operator-routes-edit");
    await typeInto('#routes-form input[name="routes[0].weight"]', "2");
    await page.click("#routes-save");
    await page.waitForSelector(`#route-settings tr[data-routes-model="${MODEL}"]`);
    expect(await textOf(page, `#route-settings tr[data-routes-model="${MODEL}"] td:nth-child(2)`)).toBe("admin");
    expect(await textOf(page, `#route-settings tr[data-routes-model="${MODEL}"] td:nth-child(3)`)).toBe("engine-b → acme-upstream, 2, pinned");

    const served = `#model-routes tr[data-route="${MODEL}#0"]`;
    await page.waitForSelector(served);
    expect(await textOf(page, `${served} td:nth-child(3)`)).toBe("engine-b");
    await page.click(`${served} .route-test`);
    await page.waitForFunction((s) => /^ok · HTTP 200 · \d+ ms$/.test(document.querySelector(`${s} .route-result`)?.textContent?.trim() ?? ""), {}, served);
    expect(engine.requests.map((r) => r.model)).toEqual(["acme-upstream"]);
    await shot("operator-routes-tested");

    await page.click(`#route-settings tr[data-routes-model="${MODEL}"] .routes-edit`);
    await page.waitForSelector("#routes-offline");
    await page.click("#routes-offline");
    await waitText(`#route-settings tr[data-routes-model="${MODEL}"] td:nth-child(3)`, "offline (no routes)");
    expect(await listed()).toBeNull();
    await page.click(`#route-settings tr[data-routes-model="${MODEL}"] .routes-edit`);
    await page.waitForSelector("#routes-remove");
    await page.click("#routes-remove");
    await page.waitForFunction((s) => document.querySelector(s) === null, {}, `#route-settings tr[data-routes-model="${MODEL}"]`);
    expect(await listed()).not.toBeNull(); // back on SWITCHYARD_UPSTREAM_URL
  }, BROWSER_TEST_MS);

  test("remove the upstream and the model written here; no script errors or policy violations", async () => {
    await page.click('#upstreams tr[data-upstream="engine-b"] .upstream-remove');
    await page.waitForFunction(() => document.querySelector('#upstreams tr[data-upstream="engine-b"]') === null);
    await page.click(`${row} .model-remove`);
    await page.waitForFunction((s) => document.querySelector(s) === null, {}, row);
    expect(await listed()).toBeNull();
    expect(problems.filter((p) => !p.includes("Failed to load resource"))).toEqual([]);
  }, BROWSER_TEST_MS);
});
