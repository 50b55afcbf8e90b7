/** The request log's query parsing and CSV lines: UTC times, named 400s, exact money, safe cells. */
import { expect, test } from "bun:test";
import { csvLine, parseLogQuery, requestIdAt, type LogRow } from "./request-log";
import { DomainError } from "../errors";

const q = (s: string) => parseLogQuery(new URLSearchParams(s));
const fieldOf = (s: string) => {
  try {
    q(s);
  } catch (e) {
    return (e as DomainError).param;
  }
  return null;
};

test("times: dates and zone-less times are UTC whatever the server's zone; milliseconds as they are", () => {
  expect(q("from=2026-11-27").fromMs).toBe(Date.UTC(2026, 10, 27));
  expect(q("from=2026-11-27T10:30").fromMs).toBe(Date.UTC(2026, 10, 27, 10, 30));
  expect(q("from=2026-11-27T10:30:00%2B02:00").fromMs).toBe(Date.UTC(2026, 10, 27, 8, 30));
  expect(q("to=1700000000000").toMs).toBe(1_700_000_000_000);
  for (const bad of ["from=Nov%2027%202026", "from=yesterday", "to=2026-13-45", "from=-5"]) expect(fieldOf(bad)).toBe(bad.split("=")[0]!);
});

test("request ids at a time sort between the ids before and after it", () => {
  const at = Date.UTC(2026, 10, 27);
  expect(requestIdAt(at)).toBe(`req_${at.toString(36).padStart(9, "0")}`);
  expect(`${requestIdAt(at)}abc` > requestIdAt(at)).toBe(true);
  expect(`${requestIdAt(at - 1)}zzz` < requestIdAt(at)).toBe(true);
});

test("a CSV line: exact decimal cost, quoted cells, no formula", () => {
  const row: LogRow = {
    request_id: requestIdAt(Date.UTC(2026, 10, 27)) + "x", account_id: "acct_1", key_id: null, endpoint: "/v1/chat/completions",
    model: '=HYPERLINK("a,b")', http_status: 200, outcome: "completed", streamed: true, duration_ms: 12, cost_units: 80,
    billed: true, input_tokens: 3, output_tokens: 4, characters: 0,
  };
  expect(csvLine(row)).toBe(`${row.request_id},2026-11-27T00:00:00.000Z,acct_1,,"'=HYPERLINK(""a,b"")",/v1/chat/completions,completed,200,true,12,3,4,0,0.00000008\r\n`);
});
