/** Reads a Responses answer (a JSON body or an SSE stream) into the objects a schema check needs. */
import { SseParser } from "../../src/protocols/sse";

export interface ResponsesAnswer {
  /** The Response object: the body, or the one in the stream's final event. */
  response: Record<string, any> | null;
  /** Every stream event in order (empty for a plain body). */
  events: Record<string, any>[];
}

export function readResponsesAnswer(text: string, contentType: string): ResponsesAnswer {
  if (!contentType.includes("text/event-stream")) return { response: JSON.parse(text), events: [] };
  const parser = new SseParser();
  const events = [...parser.push(text), ...parser.end()].filter((e) => e.data !== "[DONE]").map((e) => JSON.parse(e.data) as Record<string, any>);
  const last = events.at(-1);
  return { response: last?.response ?? null, events };
}
