/**
 * `npm run bench`: runs every test/bench/*.bench.ts file, one after another, each in its own
 * process (so one benchmark's servers and heap never skew the next). A file may be named on the
 * command line to run only it: `bun run test/bench/run.ts gateway`.
 */
import { Glob } from "bun";
import { basename, join } from "node:path";

const dir = import.meta.dir;
const only = process.argv.slice(2);
const files = [...new Glob("*.bench.ts").scanSync({ cwd: dir })]
  .sort()
  .filter((f) => only.length === 0 || only.some((o) => basename(f).startsWith(o)));

if (files.length === 0) {
  console.error(`no benchmark matches ${only.join(", ") || "test/bench/*.bench.ts"}`);
  process.exit(2);
}

let failed = 0;
for (const f of files) {
  console.log(`\n=== ${f} ===`);
  const started = performance.now();
  const p = Bun.spawn([process.execPath, join(dir, f)], { stdout: "inherit", stderr: "inherit", env: process.env });
  const code = await p.exited;
  console.log(`=== ${f}: ${code === 0 ? "ok" : `FAILED (exit ${code})`} in ${((performance.now() - started) / 1000).toFixed(1)} s ===`);
  if (code !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
