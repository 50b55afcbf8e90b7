/**
 * Runs `switchyard demo` as a child process (from source or the compiled binary), reads what it
 * prints for people (the base URL, the key and the curl commands), and replays each printed curl
 * command with fetch, so a test checks the very commands a user would copy.
 */
import type { Subprocess } from "bun";

export interface PrintedRequest {
  /** "chat", "speech" or "embeddings", from the URL's path. */
  kind: string;
  url: string;
  body: unknown;
}

export interface DemoProcess {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Everything the demo printed on stdout up to "Press Ctrl-C". */
  text: string;
  /** The OpenAI base URL (…/v1). */
  baseUrl: string;
  key: string;
  folder: string;
  requests: PrintedRequest[];
  stderr(): string;
}

/** The printed curl commands: URL and the JSON after -d. */
export function printedRequests(text: string): PrintedRequest[] {
  return [...text.matchAll(/^\s*curl -s (\S+) .*-d '([^']+)'/gm)].map((m) => {
    const url = m[1]!;
    const kind = url.endsWith("/chat/completions") ? "chat" : url.endsWith("/audio/speech") ? "speech" : url.endsWith("/embeddings") ? "embeddings" : url;
    return { kind, url, body: JSON.parse(m[2]!) };
  });
}

/** Spawns `argv` (…demo --port 0) and waits for its instructions; kills it if they never come. */
export async function spawnDemo(argv: string[], cwd: string, env: Record<string, string> = {}, timeoutMs = 60_000): Promise<DemoProcess> {
  const proc = Bun.spawn(argv, {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let err = "";
  (async () => {
    for await (const c of proc.stderr) err += new TextDecoder().decode(c);
  })();
  let text = "";
  const ready = (async () => {
    const dec = new TextDecoder();
    for await (const c of proc.stdout) {
      text += dec.decode(c, { stream: true });
      if (text.includes("Press Ctrl-C")) return;
    }
    throw new Error(`demo exited before printing its instructions (stdout: ${text}; stderr: ${err})`);
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`demo did not start (stderr: ${err})`)), timeoutMs)));
  try {
    await Promise.race([ready, late]);
  } catch (e) {
    proc.kill("SIGKILL");
    throw e;
  } finally {
    clearTimeout(timer);
  }
  const field = (label: string) => new RegExp(`^\\s*${label}\\s+(\\S+)`, "m").exec(text)?.[1] ?? "";
  return { proc, text, baseUrl: field("Base URL"), key: field("API key"), folder: field("Folder"), requests: printedRequests(text), stderr: () => err };
}

/** Sends one printed request with the printed key. */
export function replay(demo: DemoProcess, kind: string): Promise<Response> {
  const r = demo.requests.find((q) => q.kind === kind);
  if (!r) throw new Error(`the demo printed no ${kind} command:\n${demo.text}`);
  return fetch(r.url, { method: "POST", headers: { authorization: `Bearer ${demo.key}`, "content-type": "application/json" }, body: JSON.stringify(r.body) });
}
