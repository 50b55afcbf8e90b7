/**
 * The response header that names the tools a request defined but the upstream never saw
 * (hosted / server tools no engine here can run). Values are the client's own tool names or
 * types, comma-separated, so a client can tell why the model did not use them.
 */
export const IGNORED_TOOLS_HEADER = "x-switchyard-ignored-tools";

export function ignoredToolsHeader(names: readonly string[]): string {
  // Header values must be visible ASCII; anything else in a client-chosen name becomes "?".
  return [...new Set(names)].map((n) => n.replace(/[^\x20-\x7e]/g, "?").replace(/,/g, "?")).join(", ");
}
