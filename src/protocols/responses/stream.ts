/**
 * Chat-completion chunks → Responses stream events, in the documented order with increasing
 * `sequence_number`:
 *   response.created, response.in_progress,
 *   per output item: output_item.added,
 *     reasoning: content_part.added, reasoning_text.delta*, reasoning_text.done, content_part.done
 *     message:   content_part.added, output_text.delta*, output_text.done, content_part.done
 *     function:  function_call_arguments.delta*, function_call_arguments.done
 *   output_item.done; finally response.completed | response.incomplete | response.failed.
 * The openai SDK's stream helper checks item ids, indexes and order strictly, so every event
 * names the item it belongs to.
 */
import type { ChatResult } from "../../chat/pipeline";
import { reasoningOf } from "../anthropic/response";
import { baseResponse, finishedResponse, outputTextPart, statusOf, type IdMaker, type ResponseShell } from "./response";

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

export class ResponsesStreamTranslator {
  private seq = 0;
  readonly output: Json[] = [];
  private open: OpenItem | null = null;
  /** Chat tool-call index → its function_call item (args may arrive after another item opened). */
  private readonly calls = new Map<number, OpenItem>();
  private finishReason: unknown = null;

  constructor(private readonly shell: ResponseShell, private readonly newId: IdMaker) {}

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
    if (reasoning) {
      const it = this.ensure("reasoning", out);
      it.text += reasoning;
      out.push(this.ev("response.reasoning_text.delta", { item_id: it.item.id, output_index: it.index, content_index: 0, delta: reasoning }));
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      const it = this.ensure("message", out);
      it.text += delta.content;
      out.push(this.ev("response.output_text.delta", { item_id: it.item.id, output_index: it.index, content_index: 0, delta: delta.content, logprobs: [] }));
    }
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) {
      const idx = typeof call.index === "number" ? call.index : 0;
      const fn = (call.function as Json | undefined) ?? {};
      let it = this.calls.get(idx);
      if (!it) {
        this.close(out);
        it = this.openItem("function_call", { id: this.newId("fc"), type: "function_call", status: "in_progress", arguments: "", call_id: this.newId("call"), name: String(fn.name ?? "") }, out);
        this.calls.set(idx, it);
      }
      if (typeof fn.arguments === "string" && fn.arguments !== "") {
        it.text += fn.arguments;
        // Arguments for a call already closed cannot be streamed any more; they still reach the final response.
        if (it === this.open) out.push(this.ev("response.function_call_arguments.delta", { item_id: it.item.id, output_index: it.index, delta: fn.arguments }));
        else this.output[it.index] = { ...this.output[it.index], arguments: it.text };
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return out;
  }

  /** The stream ended normally and was settled. */
  finish(result: ChatResult): { events: ResponsesEvent[]; response: Json } {
    const out: ResponsesEvent[] = [];
    this.close(out);
    const response = finishedResponse(this.shell, this.output, this.finishReason, result);
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

  private ensure(kind: "reasoning" | "message", out: ResponsesEvent[]): OpenItem {
    if (this.open?.kind === kind) return this.open;
    this.close(out);
    const item = kind === "reasoning"
      ? { id: this.newId("rs"), type: "reasoning", summary: [], content: [] }
      : { id: this.newId("msg"), type: "message", status: "in_progress", role: "assistant", content: [] };
    const it = this.openItem(kind, item, out);
    const part = kind === "reasoning" ? { type: "reasoning_text", text: "" } : outputTextPart("");
    out.push(this.ev("response.content_part.added", { item_id: item.id, output_index: it.index, content_index: 0, part }));
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
      const part = { type: "reasoning_text", text: it.text };
      out.push(this.ev("response.reasoning_text.done", { ...ids, content_index: 0, text: it.text }));
      out.push(this.ev("response.content_part.done", { ...ids, content_index: 0, part }));
      done = { ...it.item, content: [part] };
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
