/**
 * A dashboard session carries the scope of the key that opened it (docs/operate.md, "The dashboard"),
 * on both stores: an expired or revoked key (or a disabled account) cannot sign in, and its open
 * sessions end on their next use when the key expires, is revoked or its account disabled. A key
 * with any control (spend limit, model list, rate limit, expiry) opens a session that reads its
 * usage and uses the playground within its controls, but never creates or revokes keys; only a
 * key without controls manages the account's keys, and a change of controls applies to open
 * sessions on their next request. Issue 29.1 found a $0.001, one-model, 2 rpm key minting an
 * unrestricted key and revoking the owner's key, and an expired key signing in.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat } from "./support/gateway-client";
import { dashboardSession, signIn } from "./support/dashboard-session";
import { describeEachStore } from "./support/stores";

describeEachStore("dashboard sessions carry their key's scope", (store) => {
  let fake: FakeUpstream;
  let h: Harness;

  beforeAll(async () => {
    fake = startFakeUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_MODEL_ALIASES: '{"claude-*":"glm-4.6"}' }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    fake?.stop();
  });

  /** An account with its owner's key (no controls) and a second key with these controls. */
  async function accountWith(controls: Record<string, unknown>) {
    const owner = await h.account(5, "scope");
    const ownerKeyId = (await h.admin("GET", `/admin/accounts/${owner.id}/keys`)).body.data[0].id as string;
    const k = await h.admin("POST", `/admin/accounts/${owner.id}/keys`, { name: "limited", ...controls });
    expect(k.status).toBe(201);
    return { accountId: owner.id, ownerKey: owner.key, ownerKeyId, key: k.body.key as string, keyId: k.body.id as string };
  }

  const keysOf = async (accountId: string) => (await h.probe.apiKeyRows()).filter((r) => r.account_id === accountId);
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string; param: string | null } }).error;

  test("an expired key cannot sign in: 401 key_expired, as on /v1", async () => {
    const a = await accountWith({ expires_at: "2020-01-01T00:00:00Z" });
    expect((await chat(h, a.key)).status).toBe(401);
    const res = await signIn(h, "account", a.key);
    expect(res.status).toBe(401);
    const error = await errorOf(res);
    expect(error).toMatchObject({ code: "key_expired", param: "secret" });
    expect(error.message).toContain("2020-01-01T00:00:00.000Z");
    expect(res.headers.get("set-cookie")).toBeNull();
  });

  test("a key with controls signs in to a read-only session: no key created, changed or revoked (the issue's $0.001, one-model, 2 rpm key)", async () => {
    const a = await accountWith({ limit: 0.001, models: ["glm-4.6"], rate_limit_rpm: 2 });
    const s = await dashboardSession(h, "account", a.key);
    const info = (await (await s.call("GET", "/session")).json()) as any;
    expect(info).toMatchObject({ kind: "account", account_id: a.accountId, key_id: a.keyId, manages_keys: false, key_controls: ["limit", "models", "rate_limit_rpm"] });
    const before = (await keysOf(a.accountId)).length;

    const created = await s.call("POST", "/account/keys", { name: "escape" });
    expect(created.status).toBe(403);
    const error = await errorOf(created);
    expect(error.code).toBe("key_management_not_allowed");
    expect(error.message).toContain("a spend limit, a model list and a rate limit");
    const revoked = await s.call("DELETE", `/account/keys/${a.ownerKeyId}`);
    expect([revoked.status, (await errorOf(revoked)).code]).toEqual([403, "key_management_not_allowed"]);
    expect((await keysOf(a.accountId)).length).toBe(before);
    expect((await keysOf(a.accountId)).every((r) => r.revoked_at === null)).toBe(true);
    expect((await chat(h, a.ownerKey)).status).toBe(200);

    // It reads: the overview, and of the keys only its own (with its controls).
    expect((await s.call("GET", "/account")).status).toBe(200);
    const keys = (await (await s.call("GET", "/account/keys")).json()) as any;
    expect(keys.manage).toBe(false);
    expect(keys.data.map((k: any) => k.id)).toEqual([a.keyId]);
    expect(keys.data[0]).toMatchObject({ current: true, limit: 0.001, models: ["glm-4.6"], rate_limit_rpm: 2 });
  });

  test("each control alone makes a session read-only; a key without any manages the account's keys", async () => {
    const controls: [Record<string, unknown>, string][] = [
      [{ limit: 100 }, "limit"],
      [{ models: ["glm-4.6"] }, "models"],
      [{ rate_limit_rpm: 1000 }, "rate_limit_rpm"],
      [{ expires_at: "2099-01-01T00:00:00Z" }, "expires_at"],
    ];
    for (const [control, name] of controls) {
      const a = await accountWith(control);
      const s = await dashboardSession(h, "account", a.key);
      const res = await s.call("POST", "/account/keys", { name: "x" });
      expect([name, res.status]).toEqual([name, 403]);
      expect(((await (await s.call("GET", "/session")).json()) as any).key_controls).toEqual([name]);
    }
    const a = await accountWith({});
    const owner = await dashboardSession(h, "account", a.ownerKey);
    expect(((await (await owner.call("GET", "/session")).json()) as any)).toMatchObject({ manages_keys: true, key_controls: [] });
    const made = await owner.call("POST", "/account/keys", { name: "made" });
    expect(made.status).toBe(201);
    const keys = (await (await owner.call("GET", "/account/keys")).json()) as any;
    expect(keys.manage).toBe(true);
    expect(keys.data.length).toBe(3);
    expect((await owner.call("DELETE", `/account/keys/${a.keyId}`)).status).toBe(200);
  });

  test("controls given to a key apply to its open session on the next request, and taking them away restores management", async () => {
    const a = await accountWith({});
    const s = await dashboardSession(h, "account", a.ownerKey);
    expect((await s.call("POST", "/account/keys", { name: "one" })).status).toBe(201);
    expect((await h.admin("PATCH", `/admin/keys/${a.ownerKeyId}`, { limit: 1 })).status).toBe(200);
    expect((await s.call("POST", "/account/keys", { name: "two" })).status).toBe(403);
    expect((await s.call("DELETE", `/account/keys/${a.keyId}`)).status).toBe(403);
    expect((await h.admin("PATCH", `/admin/keys/${a.ownerKeyId}`, { limit: null })).status).toBe(200);
    expect((await s.call("POST", "/account/keys", { name: "three" })).status).toBe(201);
  });

  test("a session ends on its next use once its key has expired; GET /session then says why", async () => {
    const a = await accountWith({ expires_at: "2099-01-01T00:00:00Z" });
    const s = await dashboardSession(h, "account", a.key);
    expect((await s.call("GET", "/account")).status).toBe(200);
    expect((await h.admin("PATCH", `/admin/keys/${a.keyId}`, { expires_at: "2021-06-01T00:00:00Z" })).status).toBe(200);
    const res = await s.call("GET", "/account");
    expect(res.status).toBe(401);
    const error = await errorOf(res);
    expect(error.code).toBe("session_required");
    expect(error.message).toContain("expired at 2021-06-01T00:00:00.000Z");
    // Ended, not only refused: a later expiry does not bring it back.
    expect((await h.admin("PATCH", `/admin/keys/${a.keyId}`, { expires_at: null })).status).toBe(200);
    expect(((await (await s.call("GET", "/session")).json()) as any).kind).toBeNull();
    expect((await s.call("GET", "/account")).status).toBe(401);
  });

  test("the expiry is checked against the clock on every use, not only when the key changes", async () => {
    // Far enough ahead for the sign-in to come first on a loaded machine.
    const a = await accountWith({ expires_at: new Date(Date.now() + 4000).toISOString() });
    const s = await dashboardSession(h, "account", a.key);
    // Liveness only: the key expires on its own a moment later; nothing here changes it.
    let status = 200;
    for (let i = 0; i < 600 && status === 200; i++) {
      await Bun.sleep(50);
      status = (await s.call("GET", "/account")).status;
    }
    expect(status).toBe(401);
    expect((await signIn(h, "account", a.key)).status).toBe(401);
  });

  test("a revoked key, or a disabled account, ends the session and cannot sign in again", async () => {
    const a = await accountWith({ limit: 1 });
    const s = await dashboardSession(h, "account", a.key);
    const owner = await dashboardSession(h, "account", a.ownerKey);
    expect((await h.admin("DELETE", `/admin/keys/${a.keyId}`)).status).toBe(200);
    expect((await s.call("GET", "/account")).status).toBe(401);
    expect((await signIn(h, "account", a.key)).status).toBe(401);
    expect((await h.admin("PATCH", `/admin/accounts/${a.accountId}`, { disabled: true })).status).toBe(200);
    expect((await owner.call("GET", "/account/keys")).status).toBe(401);
    expect((await signIn(h, "account", a.ownerKey)).status).toBe(403);
  });

  test("the playground of a restricted session offers and serves only the key's models", async () => {
    const a = await accountWith({ models: ["claude-3"] });
    const s = await dashboardSession(h, "account", a.key);
    const info = (await (await s.call("GET", "/session")).json()) as any;
    expect(info.allowed_models).toEqual(["claude-3", "glm-4.6"]);
    const ok = await s.call("POST", "/account/playground/chat", { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] });
    expect(ok.status).toBe(200);
    await ok.text();
    const refused = await s.call("POST", "/account/playground/chat", { model: "kimi-k2-instruct", messages: [{ role: "user", content: "hi" }] });
    expect([refused.status, (await errorOf(refused)).code]).toEqual([403, "model_not_allowed"]);
    const owner = await dashboardSession(h, "account", a.ownerKey);
    expect(((await (await owner.call("GET", "/session")).json()) as any).allowed_models).toBeNull();

    // Its overview lists its own requests only; the owner's lists the account's.
    const ownerChat = await chat(h, a.ownerKey);
    const ownerRequest = ownerChat.headers.get("x-request-id")!;
    await ownerChat.text();
    const mine = [ok.headers.get("x-request-id")!, refused.headers.get("x-request-id")!];
    for (const id of [...mine, ownerRequest]) await recorded(id);
    const overview = (await (await s.call("GET", "/account")).json()) as any;
    expect(overview.recent_scope).toBe("key");
    expect(overview.recent.map((r: any) => r.id).sort()).toEqual(mine.sort());
    const all = (await (await owner.call("GET", "/account")).json()) as any;
    expect(all.recent_scope).toBe("account");
    expect(all.recent.map((r: any) => r.id)).toContain(ownerRequest);
  });

  /** Waits (liveness only) until the request's outcome is written: outcomes are written in batches. */
  async function recorded(requestId: string): Promise<void> {
    for (let i = 0; i < 400; i++) {
      if (await h.probe.outcome(requestId)) return;
      await Bun.sleep(25);
    }
    throw new Error(`no outcome recorded for ${requestId}`);
  }

  if (store === "sqlite") {
    test("a change another process commits (the CLI, plain SQL) reaches open sessions too", async () => {
      const a = await accountWith({});
      const s = await dashboardSession(h, "account", a.ownerKey);
      expect((await s.call("POST", "/account/keys", { name: "one" })).status).toBe(201);
      const other = new Database(join(h.dataDir, "switchyard.db"));
      try {
        other.run("UPDATE api_keys SET models = ? WHERE id = ?", [JSON.stringify(["glm-4.6"]), a.ownerKeyId]);
        expect((await s.call("POST", "/account/keys", { name: "two" })).status).toBe(403);
        other.run("UPDATE api_keys SET expires_at = ? WHERE id = ?", [Math.floor(Date.now() / 1000) - 60, a.ownerKeyId]);
        expect((await s.call("GET", "/account")).status).toBe(401);
      } finally {
        other.close();
      }
    });
  }
});
