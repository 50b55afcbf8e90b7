/**
 * The one way to get sharp. `require` (not import): sharp's ESM entry hides its native addon
 * from the bundler. In the compiled binary, libvips is extracted and pre-loaded first.
 */
import type SharpType from "sharp";

let sharp: typeof SharpType | null = null;

export function loadSharp(): typeof SharpType {
  sharp ??= require("sharp") as typeof SharpType;
  return sharp;
}
