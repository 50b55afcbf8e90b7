/**
 * Chat-completion chunks → Anthropic Messages stream events. Stateful but pure: each call
 * returns the events to send (name + payload); the route frames them with `event:` lines,
 * which is what the Anthropic SDK dispatches on.
 *
 *   message_start, ping,
 *   (content_block_start, content_block_delta*, content_block_stop)*   thinking / text / tool_use
 *   message_delta (stop_reason, cumulative usage + cost), message_stop
 *
 * Blocks never interleave: deltas only go to the open block. Upstreams may interleave parallel
 * tool calls' argument deltas (0, 1, 0, 1…), so one tool call streams live; a call that opens
 * while the live one is unfinished waits, its arguments buffered, and starts (content_block_start,
 * then its buffered arguments as one input_json_delta) only once the live block stops. The live
 * block stops when its arguments form a complete JSON object and a later call is waiting, or when
 * the turn ends. Sequential calls (the common case) still stream every delta as it arrives.
 *
 * Text or thinking that arrives while a tool call's arguments are unfinished waits until they
 * form a complete JSON object (or the turn ends): opening another block would stop the tool_use
 * block and cut its arguments short. Stop sequences are also matched in the text here (see
 * ../stop-sequences); after a match nothing more is sent. With `thinking.display: "omitted"`
 * no thinking blocks are sent.
 */
import type { ChatResult } from "../../chat/call";
import { isCompleteJsonObject } from "../tool-arguments";
import { StopScanner } from "../stop-sequences";
import { anthropicUsage, matchedStopOf, reasoningOf, stopReasonOf } from "./response";

type Json = Record<string, unknown>;

export interface AnthropicEvent {
  event: string;
  data: Json;
}

export interface StreamOptions {
  id: string;
  model: string;
  /** Our prompt estimate (or bound): Anthropic announces input tokens up front; the final count follows. */
  inputTokens: number;
  stopSequences?: readonly string[];
  /** The client asked for thinking to be omitted (`thinking.display: "omitted"`). */
  omitThinking?: boolean;
  /** The request marked cache breakpoints: cache reads are reported apart (see anthropicUsage). */
  cacheAccounting?: boolean;
  toolId: () => string;
}

type BlockKind = "thinking" | "text" | "tool_use";

interface ToolCall {
  /** The chat tool-call index. */
  index: number;
  name: string;
  /** Arguments received so far. */
  text: string;
}

/**
 * message_start's usage: sent before the upstream has said anything, so the whole prompt (our
 * count or bound) is `input_tokens` and no cache write or read is known yet — each cache field is
 * 0 for its own reason, null where no cache accounting was asked for. message_delta carries the
 * upstream's reads and writes, which the Anthropic SDK takes over these (see anthropicUsage).
 */
export function openingUsage(inputTokens: number, cacheAccounting: boolean) {
  const noneKnownYet = cacheAccounting ? 0 : null;
  return { input_tokens: inputTokens, cache_creation_input_tokens: noneKnownYet, cache_read_input_tokens: noneKnownYet, output_tokens: 1 };
}

export class AnthropicStreamTranslator {
  private blockIndex = -1;
  private open: BlockKind | null = null;
  /** Chat tool-call index → its started call (the live one, or one already stopped). */
  private readonly started = new Map<number, ToolCall>();
  /** The tool call whose block is open. */
  private live: ToolCall | null = null;
  /** Calls waiting for the live block to stop, in the order they opened. */
  private readonly waiting: ToolCall[] = [];
  private finishReason: unknown = null;
  private matchedStop: unknown = null;
  /** Text and thinking held back while a tool call's arguments are unfinished. */
  private deferred: { kind: "thinking" | "text"; text: string }[] = [];
  private readonly stops: StopScanner;

  constructor(private readonly o: StreamOptions) {
    this.stops = new StopScanner(o.stopSequences ?? []);
  }

  /** message_start, announcing `inputTokens` (the estimate given at construction unless told). */
  start(inputTokens = this.o.inputTokens): AnthropicEvent[] {
    const message = {
      id: this.o.id, type: "message", role: "assistant", model: this.o.model, content: [],
      stop_reason: null, stop_sequence: null,
      usage: openingUsage(inputTokens, this.o.cacheAccounting ?? true),
    };
    return [{ event: "message_start", data: { type: "message_start", message } }, { event: "ping", data: { type: "ping" } }];
  }

  push(chunk: Json): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    const choice = ((chunk.choices as Json[] | undefined) ?? [])[0];
    if (!choice) return out;
    const delta = (choice.delta as Json | undefined) ?? {};
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.matchedStop = matchedStopOf(choice);
    }
    // After a stop sequence matched, the turn is over for the client.
    if (this.stops.matched !== null) return out;
    const thinking = reasoningOf(delta);
    if (thinking && !this.o.omitThinking) this.content("thinking", thinking, out);
    if (typeof delta.content === "string" && delta.content !== "") this.content("text", delta.content, out);
    if (this.stops.matched !== null) return out;
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) this.toolCall(call, out);
    if (this.deferred.length > 0 && !this.blocked()) this.flushDeferred(out);
    return out;
  }

  /** A tool call's arguments are still arriving (or calls wait their turn): other blocks must wait. */
  private blocked(): boolean {
    return this.waiting.length > 0 || (this.live !== null && !isCompleteJsonObject(this.live.text));
  }

  private content(kind: "thinking" | "text", text: string, out: AnthropicEvent[]): void {
    if (this.deferred.length > 0 || this.blocked()) {
      this.deferred.push({ kind, text });
      return;
    }
    if (kind === "thinking") {
      this.ensure("thinking", out, { type: "thinking", thinking: "", signature: "" });
      out.push(this.delta({ type: "thinking_delta", thinking: text }));
      return;
    }
    const visible = this.stops.push(text);
    if (visible === "") return;
    this.ensure("text", out, { type: "text", text: "" });
    out.push(this.delta({ type: "text_delta", text: visible }));
  }

  private flushDeferred(out: AnthropicEvent[]): void {
    const held = this.deferred;
    this.deferred = [];
    for (const d of held) if (this.stops.matched === null) this.content(d.kind, d.text, out);
  }

  /** The stream ended normally; `result` carries the settled token counts and cost. */
  finish(result: ChatResult | null, fallbackOutputTokens = 0): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    this.startWaiting(out);
    // The turn is over: arguments still unfinished stay as they are, and held text follows them.
    if (this.deferred.length > 0) this.closeOpen(out);
    this.flushDeferred(out);
    const rest = this.stops.flush();
    if (rest !== "") {
      this.ensure("text", out, { type: "text", text: "" });
      out.push(this.delta({ type: "text_delta", text: rest }));
    }
    this.closeOpen(out);
    const input = result?.inputTokens ?? this.o.inputTokens;
    const output = result?.outputTokens ?? fallbackOutputTokens;
    const stop = stopReasonOf(this.finishReason, this.matchedStop, this.o.stopSequences, this.stops.matched);
    out.push({ event: "message_delta", data: { type: "message_delta", delta: stop, usage: anthropicUsage(input, output, result, this.o.cacheAccounting ?? true) } });
    out.push({ event: "message_stop", data: { type: "message_stop" } });
    return out;
  }

  /** The upstream broke mid-stream: Anthropic's in-stream error event. */
  static error(message: string): AnthropicEvent {
    return { event: "error", data: { type: "error", error: { type: "api_error", message } } };
  }

  private toolCall(call: Json, out: AnthropicEvent[]): void {
    const index = typeof call.index === "number" ? call.index : 0;
    const fn = (call.function as Json | undefined) ?? {};
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    const started = this.started.get(index);
    if (started) return this.appendArguments(started, args, out);
    const waiting = this.waiting.find((w) => w.index === index);
    if (waiting) {
      waiting.text += args;
      return;
    }
    const next: ToolCall = { index, name: String(fn.name ?? ""), text: args };
    if (this.live && (this.waiting.length > 0 || !isCompleteJsonObject(this.live.text))) this.waiting.push(next);
    else this.startCall(next, out);
  }

  private appendArguments(call: ToolCall, args: string, out: AnthropicEvent[]): void {
    // A stopped block takes no more deltas; only a malformed upstream adds to arguments that
    // already formed a complete object, and those additions are dropped.
    if (args === "" || call !== this.live) return;
    call.text += args;
    out.push(this.delta({ type: "input_json_delta", partial_json: args }));
    // Hand over to the waiting calls, each of which becomes live in turn until one is unfinished.
    while (this.waiting.length > 0 && this.live && isCompleteJsonObject(this.live.text)) this.startCall(this.waiting.shift()!, out);
  }

  /** Starts every waiting call in order (the turn is over), leaving the last one open. */
  private startWaiting(out: AnthropicEvent[]): void {
    for (let next = this.waiting.shift(); next; next = this.waiting.shift()) this.startCall(next, out);
  }

  private startCall(call: ToolCall, out: AnthropicEvent[]): void {
    this.ensure("tool_use", out, { type: "tool_use", id: this.o.toolId(), name: call.name, input: {} }, true);
    this.live = call;
    this.started.set(call.index, call);
    if (call.text !== "") out.push(this.delta({ type: "input_json_delta", partial_json: call.text }));
  }

  /** Opens a block of `kind` unless one is open already; `fresh` always opens a new one. */
  private ensure(kind: BlockKind, out: AnthropicEvent[], contentBlock: Json, fresh = false): void {
    if (this.open === kind && !fresh) return;
    if (kind !== "tool_use") this.startWaiting(out);
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
    this.live = null;
  }
}
