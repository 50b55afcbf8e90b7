/**
 * The code a client would run for a chat request ("view code" in the playground, the connect
 * panel): curl, Python (openai SDK) and JavaScript (openai SDK). The key is never filled in unless
 * the user pasted it into the page: otherwise the snippets read SWITCHYARD_API_KEY from the environment.
 */

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface SnippetInput {
  baseUrl: string;
  model: string;
  messages: ChatMessage[];
  temperature?: number | null;
  maxTokens?: number | null;
  /** Pasted by the user; kept in this page only. */
  key?: string;
}

const ENV = "SWITCHYARD_API_KEY";

function body(i: SnippetInput) {
  const b: Record<string, unknown> = { model: i.model, messages: i.messages };
  if (i.temperature !== undefined && i.temperature !== null) b.temperature = i.temperature;
  if (i.maxTokens !== undefined && i.maxTokens !== null) b.max_tokens = i.maxTokens;
  return b;
}

/** A string literal for Python or JavaScript (JSON's quoting is valid in both; messages hold only strings, so their JSON is a Python literal too). */
const lit = (s: string) => JSON.stringify(s);

function indentJson(v: unknown, pad: string): string {
  return JSON.stringify(v, null, 2).replace(/\n/g, "\n" + pad);
}

export function curlSnippet(i: SnippetInput): string {
  const auth = i.key ? i.key : `$${ENV}`;
  const json = JSON.stringify(body(i), null, 2).replace(/'/g, "'\\''");
  return `curl ${i.baseUrl}/chat/completions \\
  -H "Authorization: Bearer ${auth}" \\
  -H "Content-Type: application/json" \\
  -d '${json}'`;
}

export function pythonSnippet(i: SnippetInput): string {
  const key = i.key ? lit(i.key) : `os.environ[${lit(ENV)}]`;
  const extra = [
    i.temperature !== undefined && i.temperature !== null ? `    temperature=${i.temperature},\n` : "",
    i.maxTokens !== undefined && i.maxTokens !== null ? `    max_tokens=${i.maxTokens},\n` : "",
  ].join("");
  return `${i.key ? "" : "import os\n"}from openai import OpenAI

client = OpenAI(base_url=${lit(i.baseUrl)}, api_key=${key})
completion = client.chat.completions.create(
    model=${lit(i.model)},
    messages=${indentJson(i.messages, "    ")},
${extra})
print(completion.choices[0].message.content)`;
}

export function jsSnippet(i: SnippetInput): string {
  const key = i.key ? lit(i.key) : `process.env.${ENV}`;
  const extra = [
    i.temperature !== undefined && i.temperature !== null ? `  temperature: ${i.temperature},\n` : "",
    i.maxTokens !== undefined && i.maxTokens !== null ? `  max_tokens: ${i.maxTokens},\n` : "",
  ].join("");
  return `import OpenAI from "openai";

const client = new OpenAI({ baseURL: ${lit(i.baseUrl)}, apiKey: ${key} });
const completion = await client.chat.completions.create({
  model: ${lit(i.model)},
  messages: ${indentJson(i.messages, "  ")},
${extra}});
console.log(completion.choices[0].message.content);`;
}

export const SNIPPETS: [string, string, (i: SnippetInput) => string][] = [
  ["curl", "curl", curlSnippet],
  ["python", "Python", pythonSnippet],
  ["js", "JavaScript", jsSnippet],
];
