import { randomBytes } from "node:crypto";

/** Short random ids with a readable prefix: acct_..., key_..., req_... */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString("base64url")}`;
}
