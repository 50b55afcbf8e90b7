/**
 * The graph of value imports between a folder's TypeScript modules, and its circles: a small,
 * madge-like scan for tests that keep a folder free of import circles (issue 31.4). Only
 * relative imports inside the folder count; `import type` and imports whose every name is
 * `type` are left out, since they vanish when the code is compiled and so cannot form a
 * circle at run time. `export … from` counts like an import.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const STATEMENT = /(?:^|\n)\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+["'](\.[^"']+)["']/g;
const SIDE_EFFECT = /(?:^|\n)\s*import\s+["'](\.[^"']+)["']/g;

/** Whether an import's names are all `type` ones ("{ type A, type B }"). */
function typeOnly(clause: string): boolean {
  const names = /^\{([\s\S]*)\}$/.exec(clause.trim());
  if (!names) return false;
  const parts = names[1]!.split(",").map((p) => p.trim()).filter(Boolean);
  return parts.length > 0 && parts.every((p) => p.startsWith("type "));
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts") && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function resolveModule(from: string, spec: string, files: Set<string>): string | null {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) if (files.has(candidate)) return candidate;
  return null;
}

/** Each module of `dir` (paths relative to it) and the modules of `dir` it imports by value. */
export function valueImports(dir: string): Map<string, string[]> {
  const root = resolve(dir);
  const files = new Set(sourceFiles(root));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const targets = new Set<string>();
    for (const m of text.matchAll(STATEMENT)) {
      if (m[2] || typeOnly(m[3]!)) continue;
      const target = resolveModule(file, m[4]!, files);
      if (target) targets.add(relative(root, target));
    }
    for (const m of text.matchAll(SIDE_EFFECT)) {
      const target = resolveModule(file, m[1]!, files);
      if (target) targets.add(relative(root, target));
    }
    graph.set(relative(root, file), [...targets].sort());
  }
  return graph;
}

/** Every circle of value imports in `dir`, each as the modules along it ("a.ts → b.ts → a.ts"). */
export function importCircles(dir: string): string[] {
  const graph = valueImports(dir);
  const circles = new Set<string>();
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") {
        const loop = path.slice(path.indexOf(next));
        // One spelling per circle whatever module the walk entered it by: start at the smallest name.
        const start = loop.indexOf([...loop].sort()[0]!);
        const turned = [...loop.slice(start), ...loop.slice(0, start)];
        circles.add([...turned, turned[0]].join(" → "));
      } else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return [...circles].sort();
}
