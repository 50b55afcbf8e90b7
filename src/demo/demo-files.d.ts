// The demo's model files, imported as embedded files (`with { type: "file" }`, see models.ts):
// each import is the file's path, in the source tree or inside the compiled executable.
declare module "*.onnx" {
  const path: string;
  export default path;
}
declare module "*.bin" {
  const path: string;
  export default path;
}
