/**
 * The playground's chat: a conversation of several turns with a system prompt, temperature and
 * max tokens, streamed, billed like any request; "View code" shows the same conversation as curl,
 * Python and JavaScript. Models are the live chat models; the first is the default.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, call } from "./api";
import { ErrorLine } from "./components";
import { CodeView } from "./code-view";
import type { ChatMessage } from "./snippets";
import { SseParser } from "../../protocols/sse";

/** A number from an input, or null when blank (the server's default then). */
function numberOrNull(v: string): number | null {
  return v.trim() === "" ? null : Number(v);
}

export function ChatPlayground(props: { models: string[]; onDone: (id: string | null) => void }) {
  const [model, setModel] = useState(props.models[0] ?? "");
  const [system, setSystem] = useState("");
  const [temperature, setTemperature] = useState("");
  const [maxTokens, setMaxTokens] = useState("512");
  const [turns, setTurns] = useState<ChatMessage[]>([]);
  const [draft, setDraft] = useState("Say hello in five words.");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [showCode, setShowCode] = useState(false);
  const [base, setBase] = useState("");

  useEffect(() => {
    api("GET", "/connect").then((c) => setBase(c.base_url), () => setBase(location.origin + "/v1"));
  }, []);

  const conversation = (extra: ChatMessage[] = []): ChatMessage[] => [
    ...(system.trim() ? [{ role: "system" as const, content: system }] : []),
    ...turns,
    ...extra,
  ];

  const send = async (e: Event) => {
    e.preventDefault();
    if (!draft.trim()) return;
    const user: ChatMessage = { role: "user", content: draft };
    const messages = conversation([user]);
    const asked = [...turns, user];
    setTurns([...asked, { role: "assistant", content: "" }]);
    setDraft("");
    setBusy(true);
    setError("");
    let id: string | null = null;
    let text = "";
    try {
      const body: Record<string, unknown> = { model, stream: true, stream_options: { include_usage: true }, messages };
      const t = numberOrNull(temperature);
      const m = numberOrNull(maxTokens);
      if (t !== null) body.temperature = t;
      if (m !== null) body.max_tokens = m;
      const res = await call("POST", "/account/playground/chat", body);
      id = res.headers.get("x-generation-id");
      for await (const event of sseEvents(res.body!)) {
        if (event === "[DONE]") break;
        const chunk = JSON.parse(event);
        if (chunk.error) throw new Error(chunk.error.message);
        const delta = chunk.choices?.[0]?.delta?.content;
        if (delta) {
          text += delta;
          setTurns([...asked, { role: "assistant", content: text }]);
        }
      }
    } catch (err) {
      setError((err as Error).message);
      // A turn that got no answer is taken back, so the next send does not carry it.
      if (!text) {
        setTurns(turns);
        setDraft(user.content);
      }
    } finally {
      setBusy(false);
      props.onDone(id);
    }
  };

  const num = (v: string) => numberOrNull(v);
  return html`<form class="stack chat" onSubmit=${send} id="chat-form">
    ${props.models.length === 0 ? html`<p class="error">No chat model is available on this server right now.</p>` : html`<label>Model
      <select name="model" value=${model} onChange=${(e: Event) => setModel((e.target as HTMLSelectElement).value)}>${props.models.map((m) => html`<option value=${m}>${m}</option>`)}</select></label>`}
    <label>System prompt <textarea name="system" rows="2" placeholder="optional: how the assistant should behave" value=${system}
      onInput=${(e: Event) => setSystem((e.target as HTMLTextAreaElement).value)}></textarea></label>
    <div class="forms">
      <label>Temperature <input name="temperature" type="number" min="0" max="2" step="0.1" placeholder="model default" value=${temperature}
        onInput=${(e: Event) => setTemperature((e.target as HTMLInputElement).value)} /></label>
      <label>Max tokens <input name="max_tokens" type="number" min="1" step="1" placeholder="model default" value=${maxTokens}
        onInput=${(e: Event) => setMaxTokens((e.target as HTMLInputElement).value)} /></label>
    </div>
    <ol class="turns" id="chat-turns">${turns.map((t, i) => html`<li class=${"turn " + t.role} data-role=${t.role} key=${i}>
      <span class="muted small">${t.role}</span><div class="answer">${t.content || (busy ? "…" : "")}</div></li>`)}</ol>
    <label>Message <textarea name="prompt" rows="3" value=${draft} onInput=${(e: Event) => setDraft((e.target as HTMLTextAreaElement).value)}></textarea></label>
    <div class="pager">
      <button type="submit" id="chat-send" disabled=${busy || props.models.length === 0}>${busy ? "Streaming…" : "Send"}</button>
      <button type="button" class="secondary" id="chat-new" disabled=${busy} onClick=${() => (setTurns([]), setError(""))}>New chat</button>
      <button type="button" class="secondary" id="chat-view-code" onClick=${() => setShowCode(!showCode)}>${showCode ? "Hide code" : "View code"}</button>
    </div>
    <${ErrorLine} error=${error} />
    <output id="chat-answer" class="visually-hidden">${turns[turns.length - 1]?.role === "assistant" ? turns[turns.length - 1]!.content : ""}</output>
    ${showCode && base ? html`<${CodeView} id="chat-code" input=${{
      baseUrl: base, model, messages: conversation(draft.trim() ? [{ role: "user", content: draft }] : []), temperature: num(temperature), maxTokens: num(maxTokens),
    }} />` : null}
  </form>`;
}

/** The data payloads of a server-sent event stream (the server's own SSE parser). */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const parser = new SseParser();
  for (;;) {
    const { value, done } = await reader.read();
    for (const e of done ? parser.end() : parser.push(value)) if (e.data) yield e.data;
    if (done) return;
  }
}
