import { expect, test } from "bun:test";
import { ConfigError, loadConfig } from "./config";

test("stored-response retention, quota and the stop grace period: defaults", () => {
  const c = loadConfig({});
  expect(c.responsesRetentionSeconds).toBe(30 * 86_400);
  expect(c.responsesQuotaBytes).toBe(100 * 1024 * 1024);
  expect(c.shutdownGraceMs).toBe(30_000);
});

test.each([
  ["SWITCHYARD_RESPONSES_RETENTION_DAYS", "0"],
  ["SWITCHYARD_RESPONSES_RETENTION_DAYS", "thirty"],
  ["SWITCHYARD_RESPONSES_QUOTA_BYTES", "10"],
  ["SWITCHYARD_SHUTDOWN_GRACE_SECONDS", "-1"],
  ["SWITCHYARD_SHUTDOWN_GRACE_SECONDS", "3601"],
])("%s=%s is refused naming the variable", (name, value) => {
  let err: unknown;
  try {
    loadConfig({ [name]: value });
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).variable).toBe(name);
});

test("set values are taken", () => {
  const c = loadConfig({ SWITCHYARD_RESPONSES_RETENTION_DAYS: "7", SWITCHYARD_RESPONSES_QUOTA_BYTES: "2048", SWITCHYARD_SHUTDOWN_GRACE_SECONDS: "0" });
  expect([c.responsesRetentionSeconds, c.responsesQuotaBytes, c.shutdownGraceMs]).toEqual([7 * 86_400, 2048, 0]);
});
