/**
 * Which model ids get metric series of their own (docs/operate.md, "Limits, usage and metrics"): every
 * catalog model (base and turbo id) and the "unknown"/"none" placeholders always; ids an
 * upstream lists (discovered models) up to SWITCHYARD_METRICS_MAX_MODELS, the first ones seen;
 * the rest are counted together as model="other" (route="other" for a route's label).
 */
import type { Config } from "../config";
import type { Catalog } from "../catalog/catalog";
import { LabelCap } from "./label-cap";

export function modelSeriesCap(config: Pick<Config, "metricsMaxModels">, catalog: Catalog): LabelCap {
  return new LabelCap(config.metricsMaxModels, (id) => {
    if (id === "unknown" || id === "none") return true;
    const resolved = catalog.resolve(id);
    return resolved !== null && resolved.entry.discovered !== true;
  });
}
