/**
 * What an upstream's chat objects must look like before anything downstream reads them.
 * Upstream servers are other people's software: a completion or chunk whose choices, messages
 * or tool calls have the wrong types is treated as a broken upstream (502, or an error event
 * mid-stream, unbilled), never passed on to translators that would throw after a charge.
 */
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A message or delta: optional string content and an optional array of well-formed tool calls. */
function isMessageLike(m: unknown): boolean {
  if (m === undefined || m === null) return true;
  if (!isObject(m)) return false;
  if (m.content !== undefined && m.content !== null && typeof m.content !== "string" && !Array.isArray(m.content)) return false;
  if (m.tool_calls === undefined || m.tool_calls === null) return true;
  if (!Array.isArray(m.tool_calls)) return false;
  return m.tool_calls.every((c) => isObject(c) && (c.function === undefined || isObject(c.function)));
}

function hasWellFormedChoices(obj: Json, field: "message" | "delta"): boolean {
  const choices = obj.choices;
  if (!Array.isArray(choices)) return false;
  return choices.every((c) => isObject(c) && isMessageLike(c[field]));
}

/** A non-streamed chat.completion we can bill and translate. */
export function isWellFormedCompletion(obj: unknown): obj is Json {
  return isObject(obj) && hasWellFormedChoices(obj, "message");
}

/** A chat.completion.chunk we can relay and translate (a usage-only chunk has choices: []). */
export function isWellFormedChunk(obj: unknown): obj is Json {
  return isObject(obj) && (obj.choices === undefined || obj.choices === null || hasWellFormedChoices(obj, "delta"));
}
