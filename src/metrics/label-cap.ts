/**
 * A cap on the distinct models that label metrics, across every metric of a registry (docs/operate.md,
 * "Limits, usage and metrics"). Models are mostly catalog ids but may be ids an upstream lists
 * (discovered models), which a changing list makes endless. Two labels name a model: `model`
 * itself, and `route` (`<model>#<index>`). Models that are always kept (catalog models,
 * "unknown", "none") take no room; of the others, the first `max` seen get series of their own
 * for good, and every later one is recorded under "other".
 */
export const OTHER = "other";

/** The labels that name a model, and how to read the model from each. */
const MODEL_OF: Record<string, (value: string) => string> = {
  model: (v) => v,
  route: (v) => (v.lastIndexOf("#") > 0 ? v.slice(0, v.lastIndexOf("#")) : v),
};

export class LabelCap {
  private readonly admitted = new Set<string>();

  constructor(
    private readonly max: number,
    private readonly alwaysKept: (model: string) => boolean = () => false,
  ) {}

  /** Whether `model` has (or may take) series of its own without taking room. */
  has(model: string): boolean {
    return model === OTHER || this.admitted.has(model) || this.alwaysKept(model);
  }

  /** Whether `model` gets series of its own: it is kept, or there is room (which it then takes). */
  admit(model: string): boolean {
    if (this.has(model)) return true;
    if (this.admitted.size >= this.max) return false;
    this.admitted.add(model);
    return true;
  }

  /**
   * The labels to record under: as given while every model they name is admitted; else with
   * those labels set to "other". Returns the same object when nothing changed.
   */
  capped<L extends Record<string, string | number>>(labels: L): L {
    let out: L | null = null;
    for (const name in MODEL_OF) {
      const value = labels[name];
      if (value === undefined || this.admit(MODEL_OF[name]!(String(value)))) continue;
      (out ??= { ...labels } as L)[name as keyof L] = OTHER as L[keyof L];
    }
    return out ?? labels;
  }
}
