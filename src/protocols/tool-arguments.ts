/**
 * Whether streamed tool-call arguments are finished. Chat upstreams never say when one call's
 * arguments end (only the whole turn ends), so the stream translators use this to decide that
 * a call can be closed early while a later parallel call waits. Arguments are a JSON object;
 * no proper prefix of a JSON object parses as one, so `true` can only mean the call is done.
 */
export function isCompleteJsonObject(text: string): boolean {
  const t = text.trim();
  if (!t.startsWith("{") || !t.endsWith("}")) return false;
  try {
    const v: unknown = JSON.parse(t);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
