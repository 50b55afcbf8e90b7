/**
 * A cap on the distinct values of one label across every metric of a registry (README, "Limits,
 * usage and metrics"): the `model` label, whose values are mostly catalog ids but may be ids an
 * upstream lists (discovered models), which a changing list makes endless. Values that are always
 * kept (catalog models, "unknown", "none") take no room; of the others, the first `max` seen get
 * their own series for good, and every later one is recorded under "other".
 */
export const OTHER = "other";

export class LabelCap {
  private readonly admitted = new Set<string>();

  constructor(
    readonly label: string,
    private readonly max: number,
    private readonly alwaysKept: (value: string) => boolean = () => false,
  ) {}

  /** Whether `value` has (or may take) a series of its own without taking room. */
  has(value: string): boolean {
    return value === OTHER || this.admitted.has(value) || this.alwaysKept(value);
  }

  /** The value to record under: `value` itself while it is kept or there is room, else "other". */
  admit(value: string): string {
    if (this.has(value)) return value;
    if (this.admitted.size >= this.max) return OTHER;
    this.admitted.add(value);
    return value;
  }
}
