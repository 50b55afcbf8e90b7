/**
 * The dashboard client's modules import each other in one direction only (issue 31.4): views
 * import the shared components (components.ts) and each other's leaves, never the page's top
 * level (app.ts) that imports them. Checked by scanning the imports; `import type` is left out.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importCircles, valueImports } from "../../../test/support/import-graph";

test("no circle of value imports among the dashboard client's modules", () => {
  expect(importCircles(import.meta.dir)).toEqual([]);
});

test("the shared components import no view, and app.ts is imported only by main.ts", () => {
  const graph = valueImports(import.meta.dir);
  expect(graph.get("components.ts")!.filter((m) => m !== "format.ts")).toEqual([]);
  const importersOfApp = [...graph].filter(([, targets]) => targets.includes("app.ts")).map(([m]) => m);
  expect(importersOfApp).toEqual(["main.ts"]);
});

test("the scan finds a circle by value, and not one made only of type imports", () => {
  const dir = mkdtempSync(join(tmpdir(), "import-graph-"));
  try {
    writeFileSync(join(dir, "a.ts"), 'import { b } from "./b";\nexport const a = 1;\n');
    writeFileSync(join(dir, "b.ts"), 'import { c } from "./c";\nexport const b = 2;\n');
    writeFileSync(join(dir, "c.ts"), 'export { a } from "./a";\nimport type { D } from "./d";\nexport const c = 3;\n');
    writeFileSync(join(dir, "d.ts"), 'import { type C } from "./c";\nexport type D = number;\n');
    expect(importCircles(dir)).toEqual(["a.ts → b.ts → c.ts → a.ts"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
