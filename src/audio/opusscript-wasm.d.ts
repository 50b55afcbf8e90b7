// The libopus WebAssembly binary that ships in the opusscript package, imported as an embedded
// file (`with { type: "file" }`) so `bun build --compile` carries it inside the executable.
declare module "opusscript/build/opusscript_native_wasm.wasm" {
  const path: string;
  export default path;
}
declare module "opusscript/build/opusscript_native_wasm.js" {
  const factory: (module: { wasmBinary: Uint8Array }) => unknown;
  export default factory;
}
