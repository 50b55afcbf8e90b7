/**
 * The suite's default per-test timeout, preloaded by bunfig.toml so that a plain `bun test` from
 * the project's root (and `npm test`, which is just that) needs no flag: integration tests start
 * real servers, PostgreSQL and subprocesses, which on a busy 2-core machine take longer than Bun's
 * 5 s default. SWITCHYARD_TEST_TIMEOUT_MS sets it (default 30000); a test that needs more says so
 * itself, and `bun test --timeout N` wins over both (docs/testing.md).
 *
 * Bun 1.4.5 keeps a preload's setDefaultTimeout() for the first test file of a run only: it
 * resets the default between files (oven-sh/bun#43787). So the same call is also put at the top
 * of every test file as it loads. When Bun keeps a preload's default, the plugin can go.
 */
import { plugin } from "bun";
import { setDefaultTimeout } from "bun:test";
import { readFileSync } from "node:fs";

const DEFAULT_TIMEOUT_MS = 30_000;

function timeoutMs(): number {
  const text = process.env.SWITCHYARD_TEST_TIMEOUT_MS?.trim();
  if (text === undefined || text === "") return DEFAULT_TIMEOUT_MS;
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new Error(`SWITCHYARD_TEST_TIMEOUT_MS must be a whole number of milliseconds of at least 1, got '${text}'`);
  return Number(text);
}

/**
 * Whether `bun test` was given --timeout, which Bun applies to every file itself. Bun hides its own
 * flags from process.argv; Linux shows a process its whole command line (elsewhere: not known,
 * and the project's default applies).
 */
function timeoutFlagGiven(): boolean {
  try {
    return readFileSync("/proc/self/cmdline", "utf8").split("\0").some((a) => a === "--timeout" || a.startsWith("--timeout="));
  } catch {
    return false;
  }
}

if (!timeoutFlagGiven()) {
  const ms = timeoutMs();
  setDefaultTimeout(ms);
  plugin({
    name: "default test timeout in every file",
    setup(build) {
      build.onLoad({ filter: /\.test\.ts$/ }, async ({ path }) => ({
        loader: "ts",
        // On the file's first line, so that every line number in a failure stays what it is.
        contents: `import { setDefaultTimeout as __defaultTimeout } from "bun:test"; __defaultTimeout(${ms}); ${await Bun.file(path).text()}`,
      }));
    },
  });
}
