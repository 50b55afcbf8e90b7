import type { Harness } from "../../support/harness";
export async function benchSpeech(_h: Harness, _key: string, _dir: string, _seconds: number): Promise<void> {}
