/**
 * Administration of accounts, keys and credits: the operations behind both the admin HTTP API
 * and the CLI, so the two can never disagree. Inputs are validated here with named rules.
 */
import { Type } from "@sinclair/typebox";
import { accountView, nowSeconds, parseLimit, type Accounts, type LimitDefaults } from "./accounts";
import type { ApiKeys } from "./api-keys";
import type { Ledger } from "../billing/ledger";
import type { ModelIds } from "../catalog/resolve";
import { newId } from "./ids";
import { formatUsd, MAX_BALANCE, MoneyFormatError, parseUsd, usdNumber } from "../billing/money";
import { invalidField } from "../errors";
import { validate } from "../validate";
import { CreateKeyBody, keyControlsView, parseControls, parsePatch, PatchKeyBody } from "./key-controls";
import { NO_CONTROLS, type ApiKeyListing } from "./api-keys";

/** A key as the admin API lists it: no hash, its controls in OpenRouter's field names. */
function keyView(k: ApiKeyListing) {
  return {
    id: k.id, object: "api_key", account_id: k.account_id, name: k.name, prefix: k.prefix, created_at: k.created_at,
    revoked_at: k.revoked_at, revoked: k.revoked_at !== null, ...keyControlsView(k),
  };
}

export const CreateAccountBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  credits: Type.Optional(Type.Union([Type.Number(), Type.String()], { description: "a USD amount (number or decimal string)" })),
});
export const PatchAccountBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  disabled: Type.Optional(Type.Boolean()),
  rate_limit_rpm: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: "a whole number of at least 1, or null" })),
  concurrency_limit: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: "a whole number of at least 1, or null" })),
}, { additionalProperties: false });
export { CreateKeyBody, PatchKeyBody };
export const CreditsBody = Type.Object({
  amount: Type.Union([Type.Number(), Type.String()], { description: "a USD amount (number or decimal string); negative deducts" }),
  reason: Type.String({ minLength: 1, maxLength: 500 }),
});

function money(field: string, value: number | string, allowNegative: boolean): number {
  let units: number;
  try {
    units = parseUsd(value);
  } catch (e) {
    if (e instanceof MoneyFormatError) throw invalidField(field, `${e.message}`);
    throw e;
  }
  if (units === 0) throw invalidField(field, "must not be zero");
  if (Math.abs(units) > MAX_BALANCE) throw invalidField(field, `must be at most ${formatUsd(MAX_BALANCE)} USD`);
  if (!allowNegative && units < 0) throw invalidField(field, "must not be negative");
  return units;
}

/**
 * What administration uses: accounts, keys, the ledger (opening credits, adjustments, entries),
 * the default limits accounts are shown with, and the model ids a key's model list may name.
 */
export interface AdminDeps extends ModelIds {
  accounts: Accounts;
  keys: ApiKeys;
  ledger: Ledger;
  config: LimitDefaults;
}

export class Admin {
  constructor(private readonly s: AdminDeps) {}

  private async view(id: string) {
    return accountView(await this.s.accounts.mustGet(id), this.s.config);
  }

  /** The account and its opening credits are one transaction: a failure leaves nothing behind. */
  async createAccount(body: unknown) {
    const b = validate(CreateAccountBody, body);
    const credits = b.credits === undefined || b.credits === 0 || b.credits === "0" ? 0 : money("credits", b.credits, false);
    const id = newId("acct");
    await this.s.ledger.openAccount({ id, name: b.name, createdAt: nowSeconds() }, credits, "initial credits");
    return this.view(id);
  }

  async listAccounts() {
    return { object: "list", data: (await this.s.accounts.list()).map((a) => accountView(a, this.s.config)) };
  }

  getAccount(id: string) {
    return this.view(id);
  }

  async patchAccount(id: string, body: unknown) {
    const b = validate(PatchAccountBody, body);
    const patch = {
      name: b.name,
      disabled: b.disabled,
      rate_limit_rpm: parseLimit("rate_limit_rpm", b.rate_limit_rpm),
      concurrency_limit: parseLimit("concurrency_limit", b.concurrency_limit),
    };
    try {
      return accountView(await this.s.accounts.update(id, patch), this.s.config);
    } finally {
      // Cached key owners carry `disabled` and the limit overrides: a change must bite on the very
      // next request here (other instances hear of it through the store's change feed).
      this.s.keys.forget();
    }
  }

  async createKey(accountId: string, body: unknown) {
    const b = validate(CreateKeyBody, body ?? {});
    const controls = { ...NO_CONTROLS, ...parseControls(this.s, b) };
    await this.s.accounts.mustGet(accountId);
    const k = await this.s.keys.create(accountId, b.name ?? null, controls);
    const stored = await this.s.keys.get(k.id);
    return { ...(stored ? keyView(stored) : { id: k.id, object: "api_key", account_id: accountId, name: k.name, prefix: k.prefix }), key: k.key };
  }

  async listKeys(accountId: string) {
    await this.s.accounts.mustGet(accountId);
    return { object: "list", data: (await this.s.keys.listForAccount(accountId)).map(keyView) };
  }

  /** Changes a key's name or controls; they apply from the next request (cached owners are dropped). */
  async patchKey(keyId: string, body: unknown) {
    const b = validate(PatchKeyBody, body ?? {});
    return keyView(await this.s.keys.update(keyId, parsePatch(this.s, b)));
  }

  revokeKey(keyId: string) {
    return this.s.keys.revoke(keyId);
  }

  async adjustCredits(accountId: string, body: unknown) {
    const b = validate(CreditsBody, body);
    const units = money("amount", b.amount, true);
    await this.s.accounts.mustGet(accountId);
    await this.s.ledger.adjust(accountId, units, b.reason);
    return this.view(accountId);
  }

  async ledger(accountId: string, limit = 1000) {
    await this.s.accounts.mustGet(accountId);
    return {
      object: "list",
      data: (await this.s.ledger.entries(accountId, limit)).map((e) => ({
        ...e,
        object: "ledger_entry",
        amount: usdNumber(e.amount as number),
        balance_after: usdNumber(e.balance_after as number),
        cache_saved: usdNumber(e.cache_saved),
      })),
    };
  }
}
