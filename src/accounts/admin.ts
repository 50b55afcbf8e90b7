/**
 * Administration of accounts, keys and credits: the operations behind both the admin HTTP API
 * and the CLI, so the two can never disagree. Inputs are validated here with named rules.
 */
import { Type } from "@sinclair/typebox";
import type { Services } from "../services";
import { accountView, parseLimit } from "./accounts";
import { formatUsd, MoneyFormatError, parseUsd, usdNumber } from "../billing/money";
import { MAX_BALANCE } from "../billing/ledger";
import { invalidField } from "../errors";
import { validate } from "../validate";

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
export const CreateKeyBody = Type.Object({ name: Type.Optional(Type.String({ maxLength: 200 })) });
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

export class Admin {
  constructor(private readonly s: Services) {}

  private view(id: string) {
    return accountView(this.s.accounts.mustGet(id), this.s.config);
  }

  createAccount(body: unknown) {
    const b = validate(CreateAccountBody, body);
    const credits = b.credits === undefined || b.credits === 0 || b.credits === "0" ? 0 : money("credits", b.credits, false);
    const acct = this.s.accounts.create(b.name);
    if (credits > 0) this.s.ledger.adjust(acct.id, credits, "initial credits");
    return this.view(acct.id);
  }

  listAccounts() {
    return { object: "list", data: this.s.accounts.list().map((a) => accountView(a, this.s.config)) };
  }

  getAccount(id: string) {
    return this.view(id);
  }

  patchAccount(id: string, body: unknown) {
    const b = validate(PatchAccountBody, body);
    this.s.accounts.update(id, {
      name: b.name,
      disabled: b.disabled,
      rate_limit_rpm: parseLimit("rate_limit_rpm", b.rate_limit_rpm),
      concurrency_limit: parseLimit("concurrency_limit", b.concurrency_limit),
    });
    // Cached key owners carry `disabled` and the limit overrides: a change must bite on the very next request.
    this.s.keys.forget();
    return this.view(id);
  }

  createKey(accountId: string, body: unknown) {
    const b = validate(CreateKeyBody, body ?? {});
    this.s.accounts.mustGet(accountId);
    const k = this.s.keys.create(accountId, b.name ?? null);
    return { id: k.id, object: "api_key", key: k.key, prefix: k.prefix, account_id: accountId, name: k.name };
  }

  listKeys(accountId: string) {
    this.s.accounts.mustGet(accountId);
    return { object: "list", data: this.s.keys.listForAccount(accountId).map((k) => ({ ...k, object: "api_key", revoked: k.revoked_at !== null })) };
  }

  revokeKey(keyId: string) {
    return this.s.keys.revoke(keyId);
  }

  adjustCredits(accountId: string, body: unknown) {
    const b = validate(CreditsBody, body);
    const units = money("amount", b.amount, true);
    this.s.accounts.mustGet(accountId);
    this.s.ledger.adjust(accountId, units, b.reason);
    return this.view(accountId);
  }

  ledger(accountId: string, limit = 1000) {
    this.s.accounts.mustGet(accountId);
    return {
      object: "list",
      data: this.s.ledger.entries(accountId, limit).map((e) => ({
        ...e,
        object: "ledger_entry",
        amount: usdNumber(e.amount as number),
        balance_after: usdNumber(e.balance_after as number),
      })),
    };
  }
}
