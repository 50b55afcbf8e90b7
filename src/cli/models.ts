/** `switchyard models pull`: fetching model files (implemented with the local engines). */
import type { Config } from "../config";

export async function runModelsCommand(_config: Config, sub: string | undefined, _rest: string[]): Promise<number> {
  process.stderr.write(`switchyard: 'models ${sub ?? ""}' is not available in this build yet.\n`);
  return 2;
}
