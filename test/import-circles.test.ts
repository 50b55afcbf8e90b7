/**
 * No import circle by value in src/: modules that import each other's values depend on the order
 * they are evaluated in, and cannot be understood or tested apart. Imports of types only are
 * erased at build time and do not count (Bun's transpiler leaves them out of its scan), nor do
 * dynamic `import()`s, which load on first use.
 */
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "..", "src");

/** Circles known and being taken apart in their own changes; remove an entry when its circle is gone. */
const KNOWN: string[] = [];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

const transpiler = new Bun.Transpiler({ loader: "ts" });

/** The files a source imports values from, by static import or re-export. */
function valueImports(file: string): string[] {
  return transpiler
    .scanImports(readFileSync(file, "utf8").replace(/^#!.*/, "")) // the scanner does not take a shebang line
    .filter((i) => i.kind === "import-statement" && i.path.startsWith("."))
    .map((i) => resolve(dirname(file), i.path))
    .map((base) => [`${base}.ts`, join(base, "index.ts"), base].find((p) => existsSync(p) && statSync(p).isFile()))
    .filter((p): p is string => p !== undefined);
}

/** The circles: every strongly connected group of more than one file (Tarjan's algorithm). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const files = sources(SRC);
const found = circles(new Map(files.map((f) => [f, valueImports(f)]))).map((c) => c.map((f) => relative(SRC, f)));

test("the circle finder sees a real circle (it must be able to fail)", () => {
  const a = "/x/a.ts";
  const b = "/x/b.ts";
  expect(circles(new Map([[a, [b]], [b, [a]], ["/x/c.ts", [a]]]))).toEqual([[a, b]]);
  // And the scan sees value imports only.
  const scanned = transpiler.scanImports(`import type { A } from "./a"; import { type B } from "./b"; import { C } from "./c"; export { D } from "./d";`);
  expect(scanned.map((i) => i.path)).toEqual(["./c", "./d"]);
});

test("the HTTP app and its routes import each other by type only", () => {
  expect(found.filter((c) => c.includes("http/app.ts"))).toEqual([]);
});

test("no other import circle by value in src/", () => {
  expect(found.filter((c) => !KNOWN.some((k) => c.includes(k)))).toEqual([]);
});
