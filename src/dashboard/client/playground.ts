/**
 * The playground: real, billed requests through the normal endpoints (the server makes them with
 * this session's key). Chat (chat-playground.ts) is a streamed conversation; speech plays the audio; embeddings shows the
 * vectors. After each request its generation record is read from the ledger to show its cost.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, call } from "./api";
import { ErrorLine, GenerationRecord, Tabs } from "./components";
import { count, usd } from "./format";
import { ChatPlayground } from "./chat-playground";
import { liveModels, type LiveModels as Models } from "./live-models";

/** The record of a request once the ledger has it (a stream's charge lands when it ends). */
async function billedRecord(id: string): Promise<any> {
  let record: any = null;
  for (let i = 0; i < 40; i++) {
    try {
      record = await api("GET", `/account/generations/${encodeURIComponent(id)}`);
      if (record.billed || record.status === "failed") return record;
    } catch {
      // not written yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return record;
}

/** The live models this session's key may call (`allowed`: ids from the session; null: all). */
function allowedOnly(models: Models, allowed: string[] | null): Models {
  if (allowed === null) return models;
  const ok = (id: string) => allowed.includes(id);
  return { chat: models.chat.filter(ok), speech: models.speech.filter(ok), embedding: models.embedding.filter(ok) };
}

export function Playground(props: { onBilled: () => void; allowed: string[] | null }) {
  const [tab, setTab] = useState("chat");
  const [models, setModels] = useState<Models | null>(null);
  const [record, setRecord] = useState<any>(null);

  useEffect(() => {
    // Public endpoint (no key): the live models only, in the server's order.
    liveModels().then((m) => setModels(allowedOnly(m, props.allowed)), () => setModels({ chat: [], speech: [], embedding: [] }));
  }, []);

  const done = async (id: string | null) => {
    if (!id) return;
    setRecord(await billedRecord(id));
    props.onBilled();
  };

  return html`<section class="playground" aria-label="Playground">
    <h2>Playground</h2>
    <p class="muted small">Requests here are real and billed to this account like any other.</p>
    ${props.allowed ? html`<p class="muted small" id="playground-allowed">This key may use only: ${props.allowed.join(", ")}.</p>` : null}
    <${Tabs} tabs=${[["chat", "Chat"], ["speech", "Speech"], ["embeddings", "Embeddings"]]} current=${tab} onPick=${(t: string) => (setTab(t), setRecord(null))} />
    ${!models ? html`<p class="muted">Loading models…</p>` : null}
    ${models && tab === "chat" ? html`<${ChatPlayground} models=${models.chat} onDone=${done} />` : null}
    ${models && tab === "speech" ? html`<${SpeechPlayground} models=${models.speech} onDone=${done} />` : null}
    ${models && tab === "embeddings" ? html`<${EmbeddingsPlayground} models=${models.embedding} onDone=${done} />` : null}
    ${record ? html`<p class="cost" id="playground-cost">Cost of this request: <strong>${usd(record.total_cost)}</strong></p><${GenerationRecord} record=${record} />` : null}
  </section>`;
}

function ModelSelect(props: { models: string[] }) {
  if (props.models.length === 0) return html`<p class="error">No model of this kind is available on this server right now.</p>`;
  return html`<label>Model <select name="model">${props.models.map((m) => html`<option value=${m}>${m}</option>`)}</select></label>`;
}

function SpeechPlayground(props: { models: string[]; onDone: (id: string | null) => void }) {
  const [voices, setVoices] = useState<string[]>([]);
  const [audio, setAudio] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");

  useEffect(() => {
    fetch("/v1/audio/voices").then((r) => (r.ok ? r.json() : { data: [] })).then((v: { data: { id: string }[] }) => setVoices(v.data.map((x) => x.id)));
  }, []);
  useEffect(() => () => audio && URL.revokeObjectURL(audio), [audio]);

  const speak = async (e: Event) => {
    e.preventDefault();
    const f = (e.target as HTMLFormElement).elements;
    const body = {
      model: (f.namedItem("model") as HTMLSelectElement).value,
      input: (f.namedItem("input") as HTMLTextAreaElement).value,
      voice: (f.namedItem("voice") as HTMLSelectElement).value,
      response_format: (f.namedItem("format") as HTMLSelectElement).value,
    };
    setBusy(true);
    setError("");
    let id: string | null = null;
    try {
      const res = await call("POST", "/account/playground/speech", body);
      id = res.headers.get("x-generation-id");
      setAudio(URL.createObjectURL(await res.blob()));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
      props.onDone(id);
    }
  };

  return html`<form class="stack" onSubmit=${speak} id="speech-form">
    <${ModelSelect} models=${props.models} />
    <label>Voice <select name="voice">${voices.map((v) => html`<option value=${v}>${v}</option>`)}</select></label>
    <label>Format <select name="format"><option value="mp3">mp3</option><option value="wav">wav</option><option value="opus">opus</option><option value="flac">flac</option></select></label>
    <label>Text <textarea name="input" rows="3" required maxlength="4096">Hello from Switchyard.</textarea></label>
    <button type="submit" id="speech-send" disabled=${busy || props.models.length === 0 || voices.length === 0}>${busy ? "Synthesising…" : "Speak"}</button>
    <${ErrorLine} error=${error} />
    ${audio ? html`<audio id="speech-audio" controls autoplay src=${audio}></audio>` : null}
  </form>`;
}

function EmbeddingsPlayground(props: { models: string[]; onDone: (id: string | null) => void }) {
  const [result, setResult] = useState<any>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");

  const embed = async (e: Event) => {
    e.preventDefault();
    const f = (e.target as HTMLFormElement).elements;
    const lines = (f.namedItem("inputs") as HTMLTextAreaElement).value.split("\n").map((l) => l.trim()).filter(Boolean);
    setBusy(true);
    setError("");
    setResult(null);
    let id: string | null = null;
    try {
      const res = await call("POST", "/account/playground/embeddings", { model: (f.namedItem("model") as HTMLSelectElement).value, input: lines });
      id = res.headers.get("x-generation-id");
      setResult(await res.json());
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
      props.onDone(id);
    }
  };

  return html`<form class="stack" onSubmit=${embed} id="embeddings-form">
    <${ModelSelect} models=${props.models} />
    <label>Inputs, one per line <textarea name="inputs" rows="3" required>${"The quick brown fox.\nA lazy dog."}</textarea></label>
    <button type="submit" id="embeddings-send" disabled=${busy || props.models.length === 0}>${busy ? "Embedding…" : "Embed"}</button>
    <${ErrorLine} error=${error} />
    ${result ? html`<div id="embeddings-result">
      <p>${count(result.data.length)} vectors of ${count(result.data[0]?.embedding.length ?? 0)} dimensions, ${count(result.usage?.prompt_tokens ?? 0)} tokens.</p>
      <ul class="vectors">${result.data.map((d: any) => html`<li class="mono small">[${d.embedding.slice(0, 6).map((v: number) => v.toFixed(4)).join(", ")}, …]</li>`)}</ul>
    </div>` : null}
  </form>`;
}
