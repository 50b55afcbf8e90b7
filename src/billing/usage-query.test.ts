import { describe, expect, test } from "bun:test";
import { DomainError } from "../errors";
import { parseBound, parseGroupBy, parseUsageQuery } from "./usage-query";

const NOW = Date.UTC(2026, 10, 21, 5, 30); // 2026-11-21T05:30Z
const iso = (ms: number) => new Date(ms).toISOString();

function rejects(fn: () => unknown): { param: string | null; message: string } {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError && e.kind === "invalid_request") return { param: e.param, message: e.message };
    throw e;
  }
  throw new Error("expected a 400");
}

describe("parseUsageQuery", () => {
  test.each([
    [{}, "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z", ["day"]],
    [{ start: "2026-11-05", end: "2026-11-05" }, "2026-11-05T00:00:00.000Z", "2026-11-06T00:00:00.000Z", ["day"]],
    [{ start: "2026-10-01" }, "2026-10-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z", ["day"]],
    [{ start: "2026-11-01T12:00:00Z", end: "2026-11-01T13:30:00+01:00" }, "2026-11-01T12:00:00.000Z", "2026-11-01T12:30:00.000Z", ["day"]],
    [{ group_by: "model,endpoint" }, "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z", ["model", "endpoint"]],
    [{ group_by: "day, model ,day" }, "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z", ["day", "model"]],
    [{ start: "2024-02-29", end: "2024-02-29" }, "2024-02-29T00:00:00.000Z", "2024-03-01T00:00:00.000Z", ["day"]],
  ] as const)("%p", (query, start, end, groupBy) => {
    const q = parseUsageQuery(query as Record<string, string>, NOW);
    expect([iso(q.startMs), iso(q.endMs), q.groupBy]).toEqual([start, end, [...groupBy]]);
  });

  test.each([
    [{ group_by: "week" }, "group_by", "'week' is not one of them"],
    [{ group_by: "" }, "group_by", "day, model, endpoint"],
    [{ group_by: "day,,model" }, "group_by", "is not one of them"],
    [{ start: "yesterday" }, "start", "ISO 8601"],
    [{ start: "2026-13-01" }, "start", "ISO 8601"],
    [{ start: "2026-02-30" }, "start", "ISO 8601"],
    [{ end: "2026-11-01T25:00:00Z" }, "end", "ISO 8601"],
    [{ end: "2026-11-01T10:00:00" }, "end", "ISO 8601"],
    [{ start: "1700000000" }, "start", "ISO 8601"],
    [{ start: "2026-11-10", end: "2026-11-09" }, "end", "must not be before start"],
  ] as const)("%p → 400 on %s", (query, param, rule) => {
    const e = rejects(() => parseUsageQuery(query as Record<string, string>, NOW));
    expect(e.param).toBe(param);
    expect(e.message).toContain(rule);
  });

  test("a date-only start is the day's first instant; a date-only end includes the whole day", () => {
    expect(parseBound("start", "2026-11-01")).toBe(Date.UTC(2026, 10, 1));
    expect(parseBound("end", "2026-11-01")).toBe(Date.UTC(2026, 10, 2));
  });

  test("group_by defaults to day", () => {
    expect(parseGroupBy(undefined)).toEqual(["day"]);
  });
});
