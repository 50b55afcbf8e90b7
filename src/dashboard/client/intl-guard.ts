/**
 * Makes Intl survive the browser's language tag. A browser under a POSIX locale can report
 * `navigator.language` as "en-US@posix", which Intl rejects with a RangeError ("Invalid language
 * tag"); uPlot builds `new Intl.NumberFormat(navigator.language)` as it loads, so one bad tag
 * would leave the whole page blank. guardIntl() (run by intl-guard-install.ts, which main.ts imports
 * first) makes constructing Intl.NumberFormat or Intl.DateTimeFormat with a tag Intl rejects fall
 * back to "en-US".
 */

type IntlConstructor = typeof Intl.NumberFormat | typeof Intl.DateTimeFormat;

function guarded<C extends IntlConstructor>(Original: C): C {
  const Guarded = function (this: unknown, locales?: string | string[], options?: object) {
    try {
      return new (Original as unknown as new (l?: unknown, o?: unknown) => object)(locales, options);
    } catch (err) {
      if (!(err instanceof RangeError) || locales === undefined) throw err;
      // A bad option throws again here, as it should; only the language tag is replaced.
      return new (Original as unknown as new (l?: unknown, o?: unknown) => object)("en-US", options);
    }
  };
  // Same prototype and statics (supportedLocalesOf), so instanceof and feature checks still work.
  Object.setPrototypeOf(Guarded, Original);
  Guarded.prototype = Original.prototype;
  return Guarded as unknown as C;
}

export function guardIntl(target: { Intl: typeof Intl } = globalThis): void {
  const intl = target.Intl as { NumberFormat: IntlConstructor; DateTimeFormat: IntlConstructor; guarded?: boolean } & typeof Intl;
  if (intl.guarded) return;
  intl.NumberFormat = guarded(intl.NumberFormat as typeof Intl.NumberFormat);
  intl.DateTimeFormat = guarded(intl.DateTimeFormat as typeof Intl.DateTimeFormat);
  intl.guarded = true;
}
