/** The live models (GET /v1/models, public: no key), by kind, in the server's order; turbo ids excluded. */
export interface LiveModels {
  chat: string[];
  speech: string[];
  embedding: string[];
}

export async function liveModels(): Promise<LiveModels> {
  const res = await fetch("/v1/models");
  if (!res.ok) throw new Error(`GET /v1/models answered ${res.status}`);
  const list = (await res.json()) as { data: { id: string; type: keyof LiveModels; service_tier?: string }[] };
  const m: LiveModels = { chat: [], speech: [], embedding: [] };
  for (const e of list.data) if (e.service_tier !== "priority") m[e.type]?.push(e.id);
  return m;
}
