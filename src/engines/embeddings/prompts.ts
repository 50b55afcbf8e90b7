/**
 * EmbeddingGemma's task prompts (from its model card), selected by the optional `input_type`
 * request field. The model was trained with these prefixes; using the matching one for queries
 * and documents measurably improves retrieval. Without `input_type` the text is embedded as is.
 */
export const TASK_PROMPTS = {
  query: "task: search result | query: ",
  document: "title: none | text: ",
  // Aliases some clients send (Cohere / Nomic style names).
  search_query: "task: search result | query: ",
  search_document: "title: none | text: ",
  question_answering: "task: question answering | query: ",
  fact_checking: "task: fact checking | query: ",
  classification: "task: classification | query: ",
  clustering: "task: clustering | query: ",
  sentence_similarity: "task: sentence similarity | query: ",
  code_retrieval: "task: code retrieval | query: ",
  summarization: "task: summarization | query: ",
} as const satisfies Record<string, string>;

export type InputType = keyof typeof TASK_PROMPTS;

export const INPUT_TYPES = Object.keys(TASK_PROMPTS) as InputType[];

export function isInputType(v: unknown): v is InputType {
  return typeof v === "string" && Object.hasOwn(TASK_PROMPTS, v);
}

/** The prefix for an input type, or "" when none was asked for. */
export function promptFor(inputType: InputType | undefined): string {
  return inputType ? TASK_PROMPTS[inputType] : "";
}
