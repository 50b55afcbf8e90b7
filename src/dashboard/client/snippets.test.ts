/** The "view code" snippets: valid Python, JavaScript and shell for any conversation, the key only when pasted. */
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { curlSnippet, jsSnippet, pythonSnippet, type SnippetInput } from "./snippets";

const input: SnippetInput = {
  baseUrl: "https://api.example.com/v1",
  model: "glm-4.6",
  messages: [
    { role: "system", content: 'Be "terse", it is true; don\'t ramble.\nNo null answers.' },
    { role: "user", content: "Hi ${HOME} `id`" },
  ],
  temperature: 0.3,
  maxTokens: 64,
};

test("Python: parses, reads the key from the environment, carries temperature and max_tokens", () => {
  const code = pythonSnippet(input);
  const r = spawnSync("python3", ["-c", "import ast,sys; ast.parse(sys.stdin.read())"], { input: code });
  expect(r.status).toBe(0);
  expect(code).toContain('api_key=os.environ["SWITCHYARD_API_KEY"]');
  expect(code).toContain("temperature=0.3,");
  expect(code).toContain("max_tokens=64,");
  expect(code).toContain("it is true;");
  expect(code).toContain("No null answers.");
});

test("JavaScript: parses as a module; the key only when pasted", () => {
  const code = jsSnippet(input);
  expect(() => new Bun.Transpiler({ loader: "js" }).transformSync(code)).not.toThrow();
  expect(code).toContain("apiKey: process.env.SWITCHYARD_API_KEY");
  expect(jsSnippet({ ...input, key: "sy-abc" })).toContain('apiKey: "sy-abc"');
});

test("curl: the body survives the shell's single quotes exactly", () => {
  const code = curlSnippet(input);
  const body = spawnSync("bash", ["-c", `printf '%s' ${code.split("-d ")[1]}`]).stdout.toString();
  expect(JSON.parse(body)).toEqual({ model: "glm-4.6", messages: input.messages, temperature: 0.3, max_tokens: 64 });
  expect(code).toContain("Bearer $SWITCHYARD_API_KEY");
});
