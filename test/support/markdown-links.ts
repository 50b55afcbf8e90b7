/**
 * The link checker of test/docs-links.test.ts. A relative link resolves when the file it names
 * exists and its `#anchor`, when the target is Markdown, is the slug of one of that file's
 * headings as GitHub makes it (lowercase; punctuation other than `-` and `_` dropped; each space a `-`; a repeated
 * slug gets `-1`, `-2`, ...). Links to other sites are not followed. Text inside code (fenced
 * blocks, `code spans`) is neither a link nor a heading.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "../..");

/** The documents whose links are checked: the README and every page of docs/. */
export function documents(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => join(ROOT, "docs", name));
  return [join(ROOT, "README.md"), ...docs];
}

/** The lines of a Markdown text outside fenced code blocks, with their line numbers (1-based). */
function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | null = null;
  text.split("\n").forEach((raw, i) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(raw);
    if (fence !== null) {
      if (marker && marker[1]![0] === fence[0] && marker[1]!.length >= fence.length && raw.trim() === marker[1]) fence = null;
      return;
    }
    if (marker) {
      fence = marker[1]!;
      return;
    }
    out.push({ line: i + 1, text: raw });
  });
  return out;
}

/** A heading's text as GitHub renders it: code spans, links, images and emphasis reduced to their text. */
function headingText(markdown: string): string {
  return markdown
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`+([^`]*)`+/g, "$1")
    .replace(/\*\*(.+?)\*\*/g, "$1")
    .replace(/\*(.+?)\*/g, "$1")
    .trim();
}

/** GitHub's anchor for one heading text (github-slugger), before duplicates are numbered. */
export function githubSlug(text: string): string {
  return headingText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown text's headings get, duplicates numbered as GitHub numbers them. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text: line } of proseLines(text)) {
    const m = /^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$/.exec(line);
    if (!m) continue;
    const base = githubSlug(m[1]!);
    let slug = base;
    const count = seen.get(base) ?? 0;
    if (count > 0) slug = `${base}-${count}`;
    seen.set(base, count + 1);
    anchors.add(slug);
  }
  return anchors;
}

/**
 * A Markdown text with its code blanked out: fenced blocks and `code spans` (which may run over
 * lines within a paragraph) become spaces, so line numbers still hold.
 */
function withoutCode(text: string): string {
  const prose = new Set(proseLines(text).map((l) => l.line));
  const lines = text.split("\n").map((raw, i) => (prose.has(i + 1) ? raw : ""));
  return lines.join("\n").replace(/(`+)(?:(?!\1)[^\n]|\n(?![ \t]*\n))+?\1/g, (span) => span.replace(/[^\n]/g, " "));
}

/**
 * The link targets of a Markdown text (inline links and images, whose text may run over lines
 * within a paragraph, and reference definitions), outside code, each with the line of its target.
 */
export function linksOf(text: string): { line: number; target: string }[] {
  const prose = withoutCode(text);
  const lineAt = (index: number) => prose.slice(0, index).split("\n").length;
  const links: { line: number; target: string }[] = [];
  for (const m of prose.matchAll(/!?\[(?:[^\]\\\n]|\\.|\n(?![ \t]*\n))*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ line: lineAt(m.index + m[0].lastIndexOf("](")), target: m[1]! });
  }
  for (const m of prose.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+"[^"\n]*")?[ \t]*$/gm)) links.push({ line: lineAt(m.index), target: m[1]! });
  return links.sort((x, y) => x.line - y.line);
}

/** The broken links of one document, each as `file:line: target (why)`. */
export function brokenLinks(file: string, text: string = readFileSync(file, "utf8")): string[] {
  const broken: string[] = [];
  const where = relative(ROOT, file);
  for (const { line, target } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...: another site
    const hash = target.indexOf("#");
    const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
    const targetFile = path === "" ? file : resolve(dirname(file), path);
    if (path !== "" && !existsSync(targetFile)) {
      broken.push(`${where}:${line}: ${target} (no file ${relative(ROOT, targetFile)})`);
      continue;
    }
    if (anchor === null || !targetFile.endsWith(".md")) continue;
    const targetText = targetFile === file ? text : statSync(targetFile).isDirectory() ? "" : readFileSync(targetFile, "utf8");
    if (!anchorsOf(targetText).has(anchor)) broken.push(`${where}:${line}: ${target} (no heading #${anchor} in ${relative(ROOT, targetFile)})`);
  }
  return broken;
}

