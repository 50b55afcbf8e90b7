/** The request log's query parsing and CSV lines: UTC times, named 400s, exact money, safe cells. */
import { expect, test } from "bun:test";
import { CSV_HEADER, csvLine, parseLogQuery, requestIdAt, type LogRow } from "./request-log";
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
    billed: true, input_tokens: 3, output_tokens: 4, characters: 0, cached_tokens: 2, cache_write_tokens: 1, cache_saved_units: 1_800,
  };
  expect(csvLine(row)).toBe(`${row.request_id},2026-11-27T00:00:00.000Z,acct_1,,"'=HYPERLINK(""a,b"")",/v1/chat/completions,completed,200,true,12,3,4,0,0.00000008,2,1,0.0000018\r\n`);
});

test("a CSV line: the cache's columns come after the first version's; a negative saving is a number, not a formula", () => {
  const row: LogRow = {
    request_id: requestIdAt(Date.UTC(2026, 10, 27)) + "y", account_id: "acct_1", key_id: "key_1", endpoint: "/v1/messages",
    model: "minimax-m2", http_status: 200, outcome: "completed", streamed: false, duration_ms: 5, cost_units: 4_050,
    billed: true, input_tokens: 10_000, output_tokens: 100, characters: 0, cached_tokens: 0, cache_write_tokens: 10_000, cache_saved_units: -750,
  };
  const cells = csvLine(row).trimEnd().split(",");
  expect(CSV_HEADER.trimEnd().split(",").slice(13)).toEqual(["cost_usd", "tokens_cached", "tokens_cache_write", "cache_saved_usd"]);
  expect(cells.slice(13)).toEqual(["0.00000405", "0", "10000", "-0.00000075"]);
  // Text that starts like a formula is still defused.
  expect(csvLine({ ...row, model: "-2+3" }).split(",")[4]).toBe("'-2+3");
});
