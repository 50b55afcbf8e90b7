/**
 * Chat-completion chunks → Responses stream events, in the documented order with increasing
 * `sequence_number`:
 *   response.created, response.in_progress,
 *   per output item: output_item.added,
 *     reasoning: content_part.added, reasoning_text.delta*, reasoning_text.done, content_part.done
 *     message:   content_part.added, output_text.delta*, output_text.done, content_part.done
 *     function:  function_call_arguments.delta*, function_call_arguments.done
 *   output_item.done; finally response.completed | response.incomplete | response.failed.
 * The terminal event ends the stream: no `data: [DONE]` follows (responsesFrames).
 * The openai SDK's stream helper checks item ids, indexes and order strictly, so every event
 * names the item it belongs to.
 *
 * With `reasoning.summary` asked for, a reasoning item streams as its summary
 * (reasoning_summary_part.added, reasoning_summary_text.delta*, .done, reasoning_summary_part.done)
 * instead of reasoning_text events; the finished item carries both.
 *
 * Text or reasoning that arrives while a tool call's arguments are unfinished waits until the
 * call's arguments form a complete JSON object (or the turn ends): closing the call early would
 * cut its arguments short.
 *
 * Parallel tool calls: upstreams may interleave several calls' argument deltas (0, 1, 0, 1…),
 * but items must not interleave, and agents act on `output_item.done`, so its arguments must be
 * complete. So one call streams live; a call that opens while the live one is unfinished waits,
 * its arguments buffered, and starts (output_item.added, then its buffered arguments as one
 * delta) only once the live call closes. The live call closes when its arguments form a complete
 * JSON object and a later call is waiting, or when the turn ends. Sequential calls (each call's
 * arguments finished before the next opens, the common case) still stream every delta live.
 */
import type { ChatResult } from "../../chat/call";
import { reasoningOf } from "../anthropic/response";
import { isCompleteJsonObject } from "../tool-arguments";
import { sseEvents } from "../sse";
import {
  baseResponse, finishedResponse, functionCallItem, outputTextPart, reasoningItem, statusOf, summaryRequested, type IdMaker, type ResponseShell,
} from "./response";

type Json = Record<string, unknown>;

export interface ResponsesEvent {
  event: string;
  data: Json;
}

interface OpenItem {
  kind: "reasoning" | "message" | "function_call";
  index: number;
  item: Json;
  text: string;
}

/** A parallel tool call that opened while another was still streaming; not started yet. */
interface WaitingCall {
  index: number;
  name: string;
  text: string;
}

/**
 * The wire frames of Responses events, `event:` and `data:` each. A Responses stream ends with its
 * terminal event (response.completed, response.incomplete or response.failed) and nothing after
 * it: OpenAI's Responses streams send no `data: [DONE]`, and strict SSE-to-JSON clients parse
 * every data line as JSON.
 */
export function responsesFrames(events: ResponsesEvent[]): string {
  return sseEvents(events);
}

export class ResponsesStreamTranslator {
  private seq = 0;
  readonly output: Json[] = [];
  private open: OpenItem | null = null;
  /** Chat tool-call index → its started function_call item. */
  private readonly calls = new Map<number, OpenItem>();
  /** Calls waiting for the live call to close, in the order they opened. */
  private readonly waiting: WaitingCall[] = [];
  private finishReason: unknown = null;
  /** Text and reasoning held back while a tool call's arguments are unfinished. */
  private deferred: { kind: "reasoning" | "message"; text: string }[] = [];
  private readonly summary: boolean;

  constructor(private readonly shell: ResponseShell, private readonly newId: IdMaker) {
    this.summary = summaryRequested(shell.request) !== null;
  }

  start(): ResponsesEvent[] {
    const response = baseResponse(this.shell);
    return [this.ev("response.created", { response }), this.ev("response.in_progress", { response })];
  }

  push(chunk: Json): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    const choice = ((chunk.choices as Json[] | undefined) ?? [])[0];
    if (!choice) return out;
    const delta = (choice.delta as Json | undefined) ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning) this.content("reasoning", reasoning, out);
    if (typeof delta.content === "string" && delta.content !== "") {
      const it = this.open;
      // Fast path, one text delta into the open message (nearly every chunk of a reply).
      if (it?.kind === "message" && this.deferred.length === 0) {
        it.text += delta.content;
        out.push(this.ev("response.output_text.delta", { item_id: it.item.id, output_index: it.index, content_index: 0, delta: delta.content, logprobs: [] }));
      } else this.content("message", delta.content, out);
    }
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) this.toolCall(call, out);
    if (this.deferred.length > 0 && !this.blocked()) this.flushDeferred(out);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return out;
  }

  /** A tool call's arguments are still arriving (or calls wait their turn): content must wait. */
  private blocked(): boolean {
    return this.waiting.length > 0 || (this.open?.kind === "function_call" && !isCompleteJsonObject(this.open.text));
  }

  private content(kind: "reasoning" | "message", text: string, out: ResponsesEvent[]): void {
    if (this.deferred.length > 0 || this.blocked()) {
      this.deferred.push({ kind, text });
      return;
    }
    const it = this.ensure(kind, out);
    it.text += text;
    // The hot path: one event per upstream chunk, built without intermediate objects.
    if (kind === "message") out.push(this.ev("response.output_text.delta", { item_id: it.item.id, output_index: it.index, content_index: 0, delta: text, logprobs: [] }));
    else if (this.summary) out.push(this.ev("response.reasoning_summary_text.delta", { item_id: it.item.id, output_index: it.index, summary_index: 0, delta: text }));
    else out.push(this.ev("response.reasoning_text.delta", { item_id: it.item.id, output_index: it.index, content_index: 0, delta: text }));
  }

  private flushDeferred(out: ResponsesEvent[]): void {
    const held = this.deferred;
    this.deferred = [];
    for (const d of held) this.content(d.kind, d.text, out);
  }

  /** The stream ended normally and was settled. */
  finish(result: ChatResult): { events: ResponsesEvent[]; response: Json } {
    const out: ResponsesEvent[] = [];
    this.startWaiting(out);
    // The turn is over: arguments still unfinished stay as they are, and held text follows them.
    if (this.deferred.length > 0) this.close(out);
    this.flushDeferred(out);
    this.close(out);
    const response = finishedResponse(this.shell, this.output, this.finishReason, result, Math.floor(Date.now() / 1000));
    out.push(this.ev(response.status === "completed" ? "response.completed" : "response.incomplete", { response }));
    return { events: out, response };
  }

  /** The upstream broke mid-stream: nothing is billed and the response ends as failed. */
  fail(message: string): ResponsesEvent[] {
    const response = { ...baseResponse(this.shell), status: "failed", error: { code: "server_error", message }, output: this.output };
    return [this.ev("response.failed", { response })];
  }

  private ev(type: string, fields: Json): ResponsesEvent {
    return { event: type, data: { type, sequence_number: this.seq++, ...fields } };
  }

  private toolCall(call: Json, out: ResponsesEvent[]): void {
    const index = typeof call.index === "number" ? call.index : 0;
    const fn = (call.function as Json | undefined) ?? {};
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    const started = this.calls.get(index);
    if (started) return this.appendArguments(started, args, out);
    const waiting = this.waiting.find((w) => w.index === index);
    if (waiting) {
      waiting.text += args;
      return;
    }
    const live = this.open?.kind === "function_call" ? this.open : null;
    if (live && (this.waiting.length > 0 || !isCompleteJsonObject(live.text))) {
      this.waiting.push({ index, name: String(fn.name ?? ""), text: args });
      return;
    }
    this.close(out);
    this.startCall({ index, name: String(fn.name ?? ""), text: args }, out);
  }

  private appendArguments(it: OpenItem, args: string, out: ResponsesEvent[]): void {
    if (args === "") return;
    it.text += args;
    if (it !== this.open) {
      // Only a malformed upstream adds to arguments that already formed a complete object;
      // they can no longer be streamed but still reach the final response.
      this.output[it.index] = { ...this.output[it.index], arguments: it.text };
      return;
    }
    out.push(this.ev("response.function_call_arguments.delta", { item_id: it.item.id, output_index: it.index, delta: args }));
    // Hand over to the waiting calls, each of which becomes live in turn until one is unfinished.
    while (this.waiting.length > 0 && this.open && isCompleteJsonObject(this.open.text)) {
      this.close(out);
      this.startCall(this.waiting.shift()!, out);
    }
  }

  /** Starts every waiting call in order (the turn is over), leaving the last one open. */
  private startWaiting(out: ResponsesEvent[]): void {
    for (let next = this.waiting.shift(); next; next = this.waiting.shift()) {
      this.close(out);
      this.startCall(next, out);
    }
  }

  private startCall(call: WaitingCall, out: ResponsesEvent[]): void {
    const item = functionCallItem(this.shell, this.newId("fc"), this.newId("call"), call.name, "", "in_progress");
    const it = this.openItem("function_call", item, out);
    this.calls.set(call.index, it);
    if (call.text === "") return;
    it.text = call.text;
    out.push(this.ev("response.function_call_arguments.delta", { item_id: item.id, output_index: it.index, delta: call.text }));
  }

  private ensure(kind: "reasoning" | "message", out: ResponsesEvent[]): OpenItem {
    if (this.open?.kind === kind) return this.open;
    this.startWaiting(out);
    this.close(out);
    const item = kind === "reasoning"
      ? { id: this.newId("rs"), type: "reasoning", summary: [], content: [] }
      : { id: this.newId("msg"), type: "message", status: "in_progress", role: "assistant", content: [] };
    const it = this.openItem(kind, item, out);
    const ids = { item_id: item.id, output_index: it.index };
    if (kind === "reasoning" && this.summary) {
      out.push(this.ev("response.reasoning_summary_part.added", { ...ids, summary_index: 0, part: { type: "summary_text", text: "" } }));
    } else {
      const part = kind === "reasoning" ? { type: "reasoning_text", text: "" } : outputTextPart("");
      out.push(this.ev("response.content_part.added", { ...ids, content_index: 0, part }));
    }
    return it;
  }

  private openItem(kind: OpenItem["kind"], item: Json, out: ResponsesEvent[]): OpenItem {
    const it: OpenItem = { kind, index: this.output.length, item, text: "" };
    this.output.push(item);
    this.open = it;
    out.push(this.ev("response.output_item.added", { output_index: it.index, item }));
    return it;
  }

  private close(out: ResponsesEvent[]): void {
    const it = this.open;
    if (!it) return;
    this.open = null;
    const ids = { item_id: it.item.id, output_index: it.index };
    let done: Json;
    if (it.kind === "function_call") {
      out.push(this.ev("response.function_call_arguments.done", { ...ids, name: it.item.name, arguments: it.text }));
      done = { ...it.item, status: "completed", arguments: it.text };
    } else if (it.kind === "reasoning") {
      if (this.summary) {
        out.push(this.ev("response.reasoning_summary_text.done", { ...ids, summary_index: 0, text: it.text }));
        out.push(this.ev("response.reasoning_summary_part.done", { ...ids, summary_index: 0, part: { type: "summary_text", text: it.text } }));
      } else {
        const part = { type: "reasoning_text", text: it.text };
        out.push(this.ev("response.reasoning_text.done", { ...ids, content_index: 0, text: it.text }));
        out.push(this.ev("response.content_part.done", { ...ids, content_index: 0, part }));
      }
      done = reasoningItem(it.item.id as string, it.text, this.summary);
    } else {
      const part = outputTextPart(it.text);
      out.push(this.ev("response.output_text.done", { ...ids, content_index: 0, text: it.text, logprobs: [] }));
      out.push(this.ev("response.content_part.done", { ...ids, content_index: 0, part }));
      done = { ...it.item, status: statusOf(this.finishReason).status === "incomplete" ? "incomplete" : "completed", content: [part] };
    }
    this.output[it.index] = done;
    out.push(this.ev("response.output_item.done", { output_index: it.index, item: done }));
  }
}
