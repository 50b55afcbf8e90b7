/**
 * Bundles the dashboard's front end (src/dashboard/client: Preact + htm + uPlot) into one
 * JavaScript and one CSS file, minified, for browsers. Used by build.ts (embedded in the binary)
 * and, from source, by assets.ts on the first request for the dashboard.
 */
import { join } from "node:path";
import type { DashboardBundle } from "./embedded-assets";

export const CLIENT_ENTRY = join(import.meta.dir, "client", "main.ts");

export async function bundleDashboard(): Promise<DashboardBundle> {
  const result = await Bun.build({ entrypoints: [CLIENT_ENTRY], target: "browser", format: "esm", minify: true, sourcemap: "none" });
  if (!result.success) throw new Error(`dashboard bundle failed: ${result.logs.map(String).join("; ")}`);
  const js = result.outputs.find((o) => o.kind === "entry-point");
  const css = result.outputs.filter((o) => o.path.endsWith(".css"));
  if (!js) throw new Error("dashboard bundle produced no JavaScript");
  return { js: await js.text(), css: (await Promise.all(css.map((c) => c.text()))).join("\n") };
}
