/** A store-level charge with the defaults a test does not care about (a direct hold of its own amount). */
import type { PostRequest } from "../../src/billing/ledger-store";

export function postOf(p: Partial<PostRequest> & { requestId: string; amount: number }): PostRequest {
  return {
    accountId: "", keyId: null, holdAmount: p.amount, direct: true, holdCreatedAt: Math.floor(Date.now() / 1000),
    endpoint: "/v1/chat/completions", model: "m", serviceTier: "default", ...p,
  };
}
