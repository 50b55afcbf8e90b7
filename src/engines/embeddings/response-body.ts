/**
 * The body of a POST /v1/embeddings answer, in OpenAI's list shape and its usual key order, made
 * by splicing text: each vector already comes as the JSON text of its `embedding` value
 * (vectors.ts encodeEmbedding), so nothing is parsed or stringified again here.
 */

/** `usage` as the route reports it; `cost` is the charge's exact decimal text (billing/money.ts formatUsd), written as a JSON number. */
export interface EmbeddingsUsage {
  prompt_tokens: number;
  total_tokens: number;
  cost: string;
}

export function embeddingsBody(vectors: readonly string[], model: string, usage: EmbeddingsUsage): string {
  let data = "";
  for (let index = 0; index < vectors.length; index++) data += `${index ? "," : ""}{"object":"embedding","index":${index},"embedding":${vectors[index]}}`;
  return `{"object":"list","data":[${data}],"model":${JSON.stringify(model)},"usage":{"prompt_tokens":${usage.prompt_tokens},"total_tokens":${usage.total_tokens},"cost":${usage.cost}}}`;
}
