/**
 * The one way to get sharp. `require` (not import): sharp's ESM entry hides its native addon
 * from the bundler. In the compiled binary libvips is first extracted and pre-loaded (see
 * src/runtime/native.ts), because the embedded addon cannot find the library by itself.
 */
import type SharpType from "sharp";
import { prepareNative } from "../runtime/native";

let sharp: typeof SharpType | null = null;

export function loadSharp(): typeof SharpType {
  if (sharp) return sharp;
  prepareNative("sharp");
  sharp = require("sharp") as typeof SharpType;
  return sharp;
}
