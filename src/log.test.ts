import { afterEach, beforeEach, expect, test } from "bun:test";
import { flushLog, Log } from "./log";

let writes: string[] = [];
const realWrite = process.stderr.write.bind(process.stderr);
beforeEach(() => {
  flushLog();
  writes = [];
  (process.stderr as any).write = (chunk: unknown) => {
    writes.push(String(chunk));
    return true;
  };
});
afterEach(() => {
  flushLog();
  (process.stderr as any).write = realWrite;
});

test("info lines of one turn go out together, in order, as one JSON object per line", async () => {
  const log = new Log("info");
  log.info("first", { request_id: "req_1", status: 200 });
  log.info("second");
  log.debug("not at this level");
  expect(writes).toEqual([]);
  await new Promise((r) => setImmediate(r));
  expect(writes).toHaveLength(1);
  const lines = writes[0]!.trimEnd().split("\n").map((l) => JSON.parse(l));
  expect(lines).toMatchObject([
    { level: "info", msg: "first", request_id: "req_1", status: 200 },
    { level: "info", msg: "second" },
  ]);
  expect(Object.keys(lines[0])).toEqual(["time", "level", "msg", "request_id", "status"]);
  expect(new Date(lines[0].time).toISOString()).toBe(lines[0].time);
});

test("a warning is written at once, after the lines gathered before it", () => {
  const log = new Log("info");
  log.info("gathered");
  log.warn("now", { why: 'quote " and newline \n' });
  expect(writes).toHaveLength(1);
  const lines = writes[0]!.trimEnd().split("\n").map((l) => JSON.parse(l));
  expect(lines.map((l) => l.msg)).toEqual(["gathered", "now"]);
  expect(lines[1].why).toBe('quote " and newline \n');
});

test("silent writes nothing; fields left undefined are left out", async () => {
  new Log("silent").error("nothing");
  new Log("debug").debug("x", { a: undefined, b: 1 });
  flushLog();
  expect(writes).toHaveLength(1);
  expect(JSON.parse(writes[0]!)).toMatchObject({ msg: "x", b: 1 });
  expect(JSON.parse(writes[0]!)).not.toHaveProperty("a");
});

test("notice is written at every level but silent, at once", () => {
  new Log("error").notice("listening", { port: 1 });
  expect(writes).toHaveLength(1);
  expect(JSON.parse(writes[0]!)).toMatchObject({ level: "info", msg: "listening", port: 1 });
  new Log("silent").notice("listening");
  flushLog();
  expect(writes).toHaveLength(1);
});
