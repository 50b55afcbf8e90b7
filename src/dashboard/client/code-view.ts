/** Tabs of code (curl, Python, JavaScript) for a chat request, with a copy button. */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { SNIPPETS, type SnippetInput } from "./snippets";

export function CodeView(props: { input: SnippetInput; id: string }) {
  const [lang, setLang] = useState("curl");
  const [copied, setCopied] = useState(false);
  const code = (SNIPPETS.find(([id]) => id === lang) ?? SNIPPETS[0]!)[2](props.input);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(code);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return html`<div class="code-view" id=${props.id}>
    <div class="code-tabs">${SNIPPETS.map(([id, label]) => html`<button type="button" id=${`${props.id}-${id}`} class=${id === lang ? "tab current" : "tab"} onClick=${() => (setLang(id), setCopied(false))}>${label}</button>`)}
      <button type="button" class="secondary" onClick=${copy}>${copied ? "Copied" : "Copy"}</button></div>
    <pre class="code"><code data-lang=${lang}>${code}</code></pre>
  </div>`;
}
