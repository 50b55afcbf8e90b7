/**
 * Chat-completion chunks → Anthropic Messages stream events. Stateful but pure: each call
 * returns the events to send (name + payload); the route frames them with `event:` lines,
 * which is what the Anthropic SDK dispatches on.
 *
 *   message_start, ping,
 *   (content_block_start, content_block_delta*, content_block_stop)*   thinking / text / tool_use
 *   message_delta (stop_reason, cumulative usage + cost), message_stop
 */
import type { ChatResult } from "../../chat/pipeline";
import { anthropicUsage, reasoningOf, stopReasonOf } from "./response";

type Json = Record<string, unknown>;

export interface AnthropicEvent {
  event: string;
  data: Json;
}

export interface StreamOptions {
  id: string;
  model: string;
  /** Our prompt estimate: Anthropic announces input tokens up front; the final count follows. */
  inputTokens: number;
  stopSequences?: readonly string[];
  toolId: () => string;
}

type BlockKind = "thinking" | "text" | "tool_use";

export class AnthropicStreamTranslator {
  private blockIndex = -1;
  private open: BlockKind | null = null;
  /** Chat tool-call index → our content block index. */
  private readonly toolBlocks = new Map<number, number>();
  private finishReason: unknown = null;
  private matchedStop: unknown = null;

  constructor(private readonly o: StreamOptions) {}

  start(): AnthropicEvent[] {
    const message = {
      id: this.o.id, type: "message", role: "assistant", model: this.o.model, content: [],
      stop_reason: null, stop_sequence: null,
      usage: { input_tokens: this.o.inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
    };
    return [{ event: "message_start", data: { type: "message_start", message } }, { event: "ping", data: { type: "ping" } }];
  }

  push(chunk: Json): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    const choice = ((chunk.choices as Json[] | undefined) ?? [])[0];
    if (!choice) return out;
    const delta = (choice.delta as Json | undefined) ?? {};
    const thinking = reasoningOf(delta);
    if (thinking) {
      this.ensure("thinking", out, { type: "thinking", thinking: "", signature: "" });
      out.push(this.delta({ type: "thinking_delta", thinking }));
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.ensure("text", out, { type: "text", text: "" });
      out.push(this.delta({ type: "text_delta", text: delta.content }));
    }
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) {
      const idx = typeof call.index === "number" ? call.index : 0;
      const fn = (call.function as Json | undefined) ?? {};
      let block = this.toolBlocks.get(idx);
      if (block === undefined) {
        this.closeOpen(out);
        block = ++this.blockIndex;
        this.open = "tool_use";
        this.toolBlocks.set(idx, block);
        out.push({ event: "content_block_start", data: { type: "content_block_start", index: block, content_block: { type: "tool_use", id: this.o.toolId(), name: String(fn.name ?? ""), input: {} } } });
      }
      if (typeof fn.arguments === "string" && fn.arguments !== "") {
        out.push({ event: "content_block_delta", data: { type: "content_block_delta", index: block, delta: { type: "input_json_delta", partial_json: fn.arguments } } });
      }
    }
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.matchedStop = choice.stop_reason ?? null;
    }
    return out;
  }

  /** The stream ended normally; `result` carries the settled token counts and cost. */
  finish(result: ChatResult | null, fallbackOutputTokens = 0): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    this.closeOpen(out);
    const input = result?.inputTokens ?? this.o.inputTokens;
    const output = result?.outputTokens ?? fallbackOutputTokens;
    out.push({
      event: "message_delta",
      data: { type: "message_delta", delta: stopReasonOf(this.finishReason, this.matchedStop, this.o.stopSequences), usage: anthropicUsage(input, output, result) },
    });
    out.push({ event: "message_stop", data: { type: "message_stop" } });
    return out;
  }

  /** The upstream broke mid-stream: Anthropic's in-stream error event. */
  static error(message: string): AnthropicEvent {
    return { event: "error", data: { type: "error", error: { type: "api_error", message } } };
  }

  private ensure(kind: BlockKind, out: AnthropicEvent[], contentBlock: Json): void {
    if (this.open === kind) return;
    this.closeOpen(out);
    this.open = kind;
    this.blockIndex++;
    out.push({ event: "content_block_start", data: { type: "content_block_start", index: this.blockIndex, content_block: contentBlock } });
  }

  private delta(delta: Json): AnthropicEvent {
    return { event: "content_block_delta", data: { type: "content_block_delta", index: this.blockIndex, delta } };
  }

  private closeOpen(out: AnthropicEvent[]): void {
    if (this.open === null) return;
    out.push({ event: "content_block_stop", data: { type: "content_block_stop", index: this.blockIndex } });
    this.open = null;
  }
}
