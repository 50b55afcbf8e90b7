/**
 * `switchyard accounts|keys|credits|ledger ...`: the admin API's account operations
 * (accounts/admin.ts) against the local store, their request bodies filled from the options
 * (commands.ts names each option's field), so the API's validation names what is wrong.
 */
import type { Admin } from "../accounts/admin";
import { DomainError } from "../errors";
import type { ParsedCommand } from "./command-line";

export function adminCommand(admin: Admin, { name, args, options, fields }: ParsedCommand): unknown {
  // The parser has checked that every required argument is there.
  const [first = "", second = ""] = args;
  switch (name) {
    case "ledger":
      return admin.ledger(first);
    case "accounts create":
      return admin.createAccount({ name: first, ...fields });
    case "accounts list":
      return admin.listAccounts();
    case "accounts show":
      return admin.getAccount(first);
    case "accounts update":
      return admin.patchAccount(first, fields);
    case "keys create":
      return admin.createKey(first, fields);
    case "keys update":
      return admin.patchKey(first, fields);
    case "keys list":
      return admin.listKeys(first);
    case "keys revoke":
      return admin.revokeKey(first);
    case "credits add":
    case "credits deduct": {
      const sub = name.slice("credits ".length);
      if (second.startsWith("-")) throw new DomainError("invalid_request", "invalid_value", `<USD> must be positive; use 'credits ${sub === "add" ? "deduct" : "add"}' instead.`);
      return admin.adjustCredits(first, {
        amount: sub === "deduct" ? `-${second}` : second,
        reason: typeof options.reason === "string" ? options.reason : `cli credits ${sub}`,
      });
    }
    default:
      throw new Error(`command '${name}' has no handler`);
  }
}
