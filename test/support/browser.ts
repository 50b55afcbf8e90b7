/**
 * A real headless Chromium for the dashboard tests: the browser binary ships in the npm package
 * @sparticuz/chromium (unpacked into the temp dir on first use, no system packages needed) and
 * puppeteer-core drives it over the DevTools protocol, under Bun. Screenshots go to
 * test/.tmp/dashboard/ (git-ignored): test artefacts, not committed.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

export const SCREENSHOT_DIR = join(import.meta.dir, "..", ".tmp", "dashboard");
/** The operator pages' screenshots (also git-ignored, under test/.tmp). */
export const PAGE_SCREENSHOT_DIR = join(import.meta.dir, "..", ".tmp", "screenshots");

export async function launchBrowser(): Promise<Browser> {
  // No WebGL needed: skips unpacking SwiftShader.
  chromium.setGraphicsMode = false;
  return puppeteer.launch({
    executablePath: await chromium.executablePath(),
    // A fixed language: under LANG=C Chromium reports "en-US@posix", which Intl rejects.
    args: [...chromium.args, "--lang=en-US"],
    env: { ...process.env, LANG: "en_US.UTF-8" },
    headless: "shell",
  });
}

/** A page that records console errors, failed requests and uncaught exceptions for the test to check. */
export async function openPage(browser: Browser, width = 1200): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 900 });
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${(e as Error).message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  return { page, problems };
}

export async function screenshot(page: Page, name: string, dir = SCREENSHOT_DIR): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`) as `${string}.png`;
  // Let charts draw after a resize before the capture.
  await new Promise((r) => setTimeout(r, 300));
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The text of the element, trimmed. */
export async function textOf(page: Page, selector: string): Promise<string> {
  await page.waitForSelector(selector);
  return (await page.$eval(selector, (e) => e.textContent ?? "")).trim();
}
