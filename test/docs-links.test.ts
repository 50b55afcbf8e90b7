/**
 * Every relative link in README.md and docs/*.md resolves: the file it names exists, and its
 * `#anchor`, when the target is Markdown, is one of that file's headings as GitHub slugs it
 * (test/support/markdown-links.ts). A moved or renamed section fails here, naming the link.
 */
import { describe, expect, test } from "bun:test";
import { join, relative } from "node:path";
import { ROOT, anchorsOf, brokenLinks, documents, githubSlug } from "./support/markdown-links";

describe("GitHub heading slugs", () => {
  test.each([
    ["Quick start", "quick-start"],
    ["The model catalog (`SWITCHYARD_CATALOG`)", "the-model-catalog-switchyard_catalog"],
    ["Try it: a first chat, speech and embedding in one command", "try-it-a-first-chat-speech-and-embedding-in-one-command"],
    ["Keys: limits, expiry, models", "keys-limits-expiry-models"],
    ["On a GPU, in detail", "on-a-gpu-in-detail"],
    ["Self-service endpoints (OpenRouter-compatible)", "self-service-endpoints-openrouter-compatible"],
    ["Scaling out (PostgreSQL)", "scaling-out-postgresql"],
    ["Accounts — keys", "accounts--keys"],
    ["Ünïcode 智谱 heading", "ünïcode-智谱-heading"],
    ["A [linked](x.md) **bold** heading", "a-linked-bold-heading"],
  ])("%s -> #%s", (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });

  test("repeated headings are numbered, and headings inside code blocks are not headings", () => {
    const text = "# Limits\n\n## Limits\n\n```sh\n# Limits (a shell comment)\n```\n\n### Limits\n";
    expect([...anchorsOf(text)]).toEqual(["limits", "limits-1", "limits-2"]);
  });
});

describe("the checker finds what is broken", () => {
  const file = join(ROOT, "docs", "example.md");
  test("a missing file, a missing anchor, one of its own page, and a link over two lines", () => {
    const text = [
      "# Example",
      "See [the README](../README.md), [nothing](../no-such-file.md), [a bad anchor](../README.md#no-such-heading),",
      "[this page](#example), [not here](#elsewhere), [a site](https://example.com/#x) and `[code](nowhere.md)`.",
      "```md",
      "[in a fence](nowhere.md)",
      "```",
      "A [link whose text runs",
      "over two lines](#gone), and `a code span that runs",
      "over two lines [code](nowhere.md)`.",
    ].join("\n");
    expect(brokenLinks(file, text)).toEqual([
      "docs/example.md:2: ../no-such-file.md (no file no-such-file.md)",
      "docs/example.md:2: ../README.md#no-such-heading (no heading #no-such-heading in README.md)",
      "docs/example.md:3: #elsewhere (no heading #elsewhere in docs/example.md)",
      "docs/example.md:8: #gone (no heading #gone in docs/example.md)",
    ]);
  });
});

describe("links between README.md and docs/ resolve", () => {
  test.each(documents().map((f) => [relative(ROOT, f), f]))("%s", (_name, file) => {
    expect(brokenLinks(file)).toEqual([]);
  });
});
