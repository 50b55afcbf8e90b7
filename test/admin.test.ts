/** The admin API over real HTTP, as docs/operate.md "Accounts, keys and credits" lists it, with exact USD money. On both stores. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { storeState } from "./support/ledger-state";
import { describeEachStore } from "./support/stores";
import { connect } from "node:net";

/** The status of a bodiless request sent from a chosen loopback address (fetch cannot choose one). */
function rawStatus(base: string, localAddress: string, requestLine: string, authorization: string): Promise<number> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), localAddress });
    let received = "";
    socket.on("error", reject);
    socket.on("connect", () => socket.write(`${requestLine} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: ${authorization}\r\nconnection: close\r\n\r\n`));
    socket.on("data", (d) => {
      received += d.toString();
      const line = received.split("\r\n")[0]!;
      if (received.includes("\r\n")) {
        socket.destroy();
        resolve(Number(line.split(" ")[1]));
      }
    });
  });
}

describeEachStore("admin API", (store) => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ SWITCHYARD_RATE_LIMIT_RPM: "600", SWITCHYARD_CONCURRENCY_LIMIT: "32" }, {}, store);
  }, 60_000);
  afterAll(() => h.stop());

  async function call(method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN, base = h.base) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  }

  function expect400(res: { status: number; body: any }, param: string) {
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error).sort()).toEqual(["code", "message", "param", "type"]);
    expect(res.body.error.param).toBe(param);
    expect(res.body.error.message).toContain(param);
  }

  describe("accounts", () => {
    test("create with credits returns the account with exact USD money and default limits", async () => {
      const res = await call("POST", "/admin/accounts", { name: "acme", credits: 12.5 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: "acme", balance: 12.5, reserved: 0, disabled: false, rate_limit_rpm: 600, concurrency_limit: 32 });
      expect(res.body.id).toMatch(/^acct_/);
      expect(await h.probe.balance(res.body.id)).toEqual({ balance: 12_500_000_000, reserved: 0 });
    });

    test("tiny and decimal-string credits are exact", async () => {
      const a = await call("POST", "/admin/accounts", { name: "tiny", credits: 0.000123 });
      expect(a.body.balance).toBe(0.000123);
      expect((await h.probe.balance(a.body.id)).balance).toBe(123_000);
      const b = await call("POST", "/admin/accounts", { name: "string", credits: "0.000000001" });
      expect(b.body.balance).toBe(0.000000001);
      expect((await h.probe.balance(b.body.id)).balance).toBe(1);
    });

    test("0.1 + 0.2 credits are exactly 0.3", async () => {
      const a = await call("POST", "/admin/accounts", { name: "float", credits: 0.1 });
      const after = await call("POST", `/admin/accounts/${a.body.id}/credits`, { amount: 0.2, reason: "top-up" });
      expect(after.body.balance).toBe(0.3);
      expect((await h.probe.balance(a.body.id)).balance).toBe(300_000_000);
    });

    test("create without credits starts at zero with no ledger entry", async () => {
      const a = await call("POST", "/admin/accounts", { name: "empty" });
      expect(a.body.balance).toBe(0);
      expect((await storeState(h, a.body.id)).entries).toBe(0);
    });

    test("list and get", async () => {
      const a = await call("POST", "/admin/accounts", { name: "listed", credits: 1 });
      const list = await call("GET", "/admin/accounts");
      expect(list.status).toBe(200);
      expect(list.body.data.map((x: { id: string }) => x.id)).toContain(a.body.id);
      const one = await call("GET", `/admin/accounts/${a.body.id}`);
      expect(one.body).toEqual(a.body);
      const missing = await call("GET", "/admin/accounts/acct_nope");
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe("not_found");
    });

    test("patch disabled and limits; null goes back to the default", async () => {
      const a = await call("POST", "/admin/accounts", { name: "patched" });
      const p = await call("PATCH", `/admin/accounts/${a.body.id}`, { disabled: true, rate_limit_rpm: 60, concurrency_limit: 4 });
      expect(p.status).toBe(200);
      expect(p.body).toMatchObject({ disabled: true, rate_limit_rpm: 60, concurrency_limit: 4 });
      const back = await call("PATCH", `/admin/accounts/${a.body.id}`, { disabled: false, rate_limit_rpm: null, concurrency_limit: null });
      expect(back.body).toMatchObject({ disabled: false, rate_limit_rpm: 600, concurrency_limit: 32 });
      expect((await call("PATCH", "/admin/accounts/acct_nope", { disabled: true })).status).toBe(404);
    });

    test.each([
      [{ rate_limit_rpm: 0 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: -5 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: 1.5 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: "10" }, "rate_limit_rpm"],
      [{ concurrency_limit: 0 }, "concurrency_limit"],
      [{ concurrency_limit: -1 }, "concurrency_limit"],
      [{ disabled: "yes" }, "disabled"],
      [{ surprise: 1 }, "surprise"],
    ])("patch %j → 400 naming %s, account unchanged", async (body, param) => {
      const a = await call("POST", "/admin/accounts", { name: "bad-patch" });
      const res = await call("PATCH", `/admin/accounts/${a.body.id}`, body);
      expect400(res, param);
      expect((await call("GET", `/admin/accounts/${a.body.id}`)).body).toEqual(a.body);
    });

    test.each([
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: 5 }, "name"],
      [{ name: "x", credits: -5 }, "credits"],
      [{ name: "x", credits: "abc" }, "credits"],
      [{ name: "x", credits: "0.0000000001" }, "credits"],
      [{ name: "x", credits: true }, "credits"],
    ])("create %j → 400 naming %s, nothing created", async (body, param) => {
      const before = (await call("GET", "/admin/accounts")).body.data.length;
      const entries = await h.probe.entryCount();
      expect400(await call("POST", "/admin/accounts", body), param);
      expect((await call("GET", "/admin/accounts")).body.data.length).toBe(before);
      expect(await h.probe.entryCount()).toBe(entries);
    });
  });

  describe("keys", () => {
    test("create shows the key once; list shows prefixes only; revoke stops it", async () => {
      const a = await call("POST", "/admin/accounts", { name: "keys", credits: 1 });
      const k = await call("POST", `/admin/accounts/${a.body.id}/keys`, { name: "laptop" });
      expect(k.status).toBe(201);
      expect(k.body.id).toMatch(/^key_/);
      expect(typeof k.body.key).toBe("string");
      expect(k.body.key.length).toBeGreaterThanOrEqual(40); // ≥ 192 bits of randomness
      expect(k.body.key.startsWith(k.body.prefix)).toBe(true);

      const list = await call("GET", `/admin/accounts/${a.body.id}/keys`);
      expect(list.body.data).toHaveLength(1);
      expect(list.body.data[0]).toMatchObject({ id: k.body.id, prefix: k.body.prefix, name: "laptop", revoked: false });
      const listed = JSON.stringify(list.body);
      expect(listed).not.toContain(k.body.key);
      expect(listed).not.toContain("hash");
      // Only a hash is stored.
      expect(JSON.stringify(await h.probe.apiKeyRows())).not.toContain(k.body.key);

      const usage = await fetch(h.base + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json" }, body: "{}" });
      expect(usage.status).toBe(400); // authenticated, then the body was judged

      const del = await call("DELETE", `/admin/keys/${k.body.id}`);
      expect(del.status).toBe(200);
      expect(del.body).toMatchObject({ id: k.body.id, revoked: true });
      const after = await fetch(h.base + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json" }, body: "{}" });
      expect(after.status).toBe(401);
      expect(((await after.json()) as any).error.code).toBe("invalid_api_key");
      expect((await call("GET", `/admin/accounts/${a.body.id}/keys`)).body.data[0].revoked).toBe(true);
    });

    test("keys of an unknown account, and revoking an unknown key, are 404", async () => {
      expect((await call("POST", "/admin/accounts/acct_nope/keys", {})).status).toBe(404);
      expect((await call("DELETE", "/admin/keys/key_nope")).status).toBe(404);
    });

    test("two keys of one account are different and both work", async () => {
      const a = await call("POST", "/admin/accounts", { name: "two-keys" });
      const k1 = await call("POST", `/admin/accounts/${a.body.id}/keys`, {});
      const k2 = await call("POST", `/admin/accounts/${a.body.id}/keys`);
      expect(k1.status).toBe(201);
      expect(k2.status).toBe(201);
      expect(k1.body.key).not.toBe(k2.body.key);
    });
  });

  describe("credits and ledger", () => {
    test("add and deduct with a reason; ledger newest first in exact USD", async () => {
      const a = await call("POST", "/admin/accounts", { name: "ledger", credits: 10 });
      const add = await call("POST", `/admin/accounts/${a.body.id}/credits`, { amount: 2.5, reason: "bonus" });
      expect(add.status).toBe(200);
      expect(add.body.balance).toBe(12.5);
      const ded = await call("POST", `/admin/accounts/${a.body.id}/credits`, { amount: "-0.000123", reason: "refund correction" });
      expect(ded.body.balance).toBe(12.499877);
      const ledger = await call("GET", `/admin/accounts/${a.body.id}/ledger`);
      expect(ledger.status).toBe(200);
      expect(ledger.body.data.map((e: any) => [e.kind, e.amount, e.balance_after, e.reason])).toEqual([
        ["debit", -0.000123, 12.499877, "refund correction"],
        ["credit", 2.5, 12.5, "bonus"],
        ["credit", 10, 10, "initial credits"],
      ]);
      expect(await h.probe.ledgerSum(a.body.id)).toBe((await h.probe.balance(a.body.id)).balance);
    });

    test.each([
      [{ amount: 0, reason: "r" }, "amount"],
      [{ amount: "0", reason: "r" }, "amount"],
      [{ amount: "ten", reason: "r" }, "amount"],
      [{ amount: "1.0000000001", reason: "r" }, "amount"],
      [{ amount: 1e-10, reason: "r" }, "amount"],
      [{ amount: null, reason: "r" }, "amount"],
      [{ reason: "r" }, "amount"],
      [{ amount: 1 }, "reason"],
      [{ amount: 1, reason: "" }, "reason"],
      [{ amount: -1000, reason: "more than the balance" }, "amount"],
    ])("credits %j → 400 naming %s, no ledger change", async (body, param) => {
      const a = await call("POST", "/admin/accounts", { name: "bad-credits", credits: 5 });
      const before = await storeState(h, a.body.id);
      expect400(await call("POST", `/admin/accounts/${a.body.id}/credits`, body), param);
      expect(await storeState(h, a.body.id)).toEqual(before);
    });

    test("credits and ledger of an unknown account are 404", async () => {
      expect((await call("POST", "/admin/accounts/acct_nope/credits", { amount: 1, reason: "r" })).status).toBe(404);
      expect((await call("GET", "/admin/accounts/acct_nope/ledger")).status).toBe(404);
    });
  });

  describe("admin authentication", () => {
    const ROUTES = [
      ["GET", "/admin/accounts"],
      ["POST", "/admin/accounts"],
      ["GET", "/admin/accounts/acct_x"],
      ["PATCH", "/admin/accounts/acct_x"],
      ["POST", "/admin/accounts/acct_x/keys"],
      ["DELETE", "/admin/keys/key_x"],
      ["POST", "/admin/accounts/acct_x/credits"],
      ["GET", "/admin/accounts/acct_x/ledger"],
    ] as const;
    const bodyFor = (method: string) => (method === "GET" || method === "DELETE" ? undefined : { name: "x", amount: 1, reason: "r" });

    test("no token → 401 missing_api_key on every admin route (and a missing token is no guess: never throttled)", async () => {
      for (const [method, path] of ROUTES) {
        const res = await call(method, path, bodyFor(method), null);
        expect({ method, path, status: res.status, code: res.body.error?.code }).toEqual({ method, path, status: 401, code: "missing_api_key" });
        expect(res.headers.get("x-request-id")).toMatch(/^req_/);
      }
    });

    // Issue 10: wrong admin tokens were answered at 2,735/s with no throttling.
    test("wrong tokens → 401 on every admin route until the address is throttled: then 429 with Retry-After, even for the right token", async () => {
      const own = await startHarness({}, {}, store);
      try {
        const statuses: [number, string][] = [];
        for (const [method, path] of ROUTES) {
          const res = await call(method, path, bodyFor(method), "wrong-token-wrong-token", own.base);
          statuses.push([res.status, res.body.error?.code]);
          if (res.status === 429) expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        }
        expect(statuses).toEqual([...Array(5).fill([401, "invalid_api_key"]), ...Array(3).fill([429, "too_many_failed_attempts"])]);
        // While throttled, not even the right token is compared: a correct guess cannot be confirmed.
        expect((await call("GET", "/admin/accounts", undefined, ADMIN_TOKEN, own.base)).status).toBe(429);
        // Another address is not affected (the server sees the client's own loopback address).
        expect(await rawStatus(own.base, "127.0.0.2", "GET /admin/accounts", `Bearer ${ADMIN_TOKEN}`)).toBe(200);
      } finally {
        await own.stop();
      }
    });

    test("the Authorization scheme is case-insensitive, for admin tokens and API keys alike", async () => {
      for (const scheme of ["bearer", "BEARER", "Bearer"]) {
        const res = await fetch(h.base + "/admin/accounts", { headers: { authorization: `${scheme} ${ADMIN_TOKEN}` } });
        expect({ scheme, status: res.status }).toEqual({ scheme, status: 200 });
      }
      const a = await h.account(1);
      for (const scheme of ["bearer", "BEARER"]) {
        const usage = await fetch(h.base + "/v1/usage", { headers: { authorization: `${scheme} ${a.key}` } });
        expect({ scheme, status: usage.status }).toEqual({ scheme, status: 200 });
        const count = await fetch(h.base + "/v1/messages/count_tokens", {
          method: "POST",
          headers: { authorization: `${scheme} ${a.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: "hi" }] }),
        });
        // Admitted before its body was read (no upstream is configured here, so the model is then 503).
        expect({ scheme, status: count.status, type: ((await count.json()) as any).error?.type }).toEqual({ scheme, status: 503, type: "overloaded_error" });
      }
    });

    test("an API key is not an admin token", async () => {
      const a = await h.account(1);
      expect((await call("GET", "/admin/accounts", undefined, a.key)).status).toBe(401);
    });

    test("without SWITCHYARD_ADMIN_TOKEN the admin API is off: 404", async () => {
      const off = await startHarness({ SWITCHYARD_ADMIN_TOKEN: "" }, {}, store);
      try {
        const res = await call("GET", "/admin/accounts", undefined, ADMIN_TOKEN, off.base);
        expect(res.status).toBe(404);
        expect(res.body.error.message).toContain("SWITCHYARD_ADMIN_TOKEN");
        expect((await call("POST", "/admin/accounts", { name: "x" }, null, off.base)).status).toBe(404);
      } finally {
        await off.stop();
      }
    });
  });
});
