/**
 * The demo's tiny models (README "Try it"): voice-82m and embedding-300m in their real layouts, but
 * tiny graphs with the real signatures (the speech is a tone, the vectors mean nothing; loading,
 * tokenizers, limits and billing are the real code paths). The files live in models/demo/
 * (written by `npm run demo:models`) and are imported as files, so `bun build --compile` embeds
 * them in the executable; `writeDemoModels` copies them into a models directory.
 */
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import voiceModel from "../../models/demo/voice-82m/onnx/model.onnx" with { type: "file" };
import voiceConfig from "../../models/demo/voice-82m/config.json" with { type: "file" };
import voicePack from "../../models/demo/voice-82m/voices/af_heart.bin" with { type: "file" };
import embeddingModel from "../../models/demo/embedding-300m/onnx/model.onnx" with { type: "file" };
import tokenizer from "../../models/demo/embedding-300m/tokenizer.json" with { type: "file" };
import tokenizerConfig from "../../models/demo/embedding-300m/tokenizer_config.json" with { type: "file" };

/** The one voice the demo's voice-82m has. */
export const DEMO_VOICE = "af_heart";

// TypeScript types a JSON import as its contents; imported as a file, it is the file's path.
const path = (p: unknown) => p as string;

/** Where each file goes under the models directory, and where it is now (source tree or binary). */
const FILES: [string, string][] = [
  ["voice-82m/onnx/model.onnx", path(voiceModel)],
  ["voice-82m/config.json", path(voiceConfig)],
  [`voice-82m/voices/${DEMO_VOICE}.bin`, path(voicePack)],
  ["embedding-300m/onnx/model.onnx", path(embeddingModel)],
  ["embedding-300m/tokenizer.json", path(tokenizer)],
  ["embedding-300m/tokenizer_config.json", path(tokenizerConfig)],
];

/** Writes the demo models into `modelsDir` (created if missing), replacing files of the same names. */
export async function writeDemoModels(modelsDir: string): Promise<void> {
  for (const [name, from] of FILES) {
    const to = join(modelsDir, name);
    mkdirSync(dirname(to), { recursive: true });
    await Bun.write(to, Bun.file(from));
  }
}
