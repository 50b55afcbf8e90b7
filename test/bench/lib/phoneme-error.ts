/**
 * Phoneme error rate of the speech front end against an independent English G2P, for
 * test/bench/real-models.bench.ts. References, each used when present on the machine (tests never
 * need them):
 *   - misaki (Kokoro's own front end, PyPI): MISAKI_PYTHON names a Python that can import it;
 *     SPACY_EN_MODEL names an installed spaCy English model when en_core_web_sm itself is missing.
 *   - espeak-ng (Debian package `espeak-ng`), its IPA mapped to Kokoro's phoneme set the way
 *     misaki's own espeak fallback maps it.
 * Both sides get the same text: the sentences after Switchyard's normaliser, so the figure
 * measures the pronunciation of words, not the reading of numbers (misaki reads "World War II"
 * as "I I"; the normaliser has its own table test). Stress marks, spaces and punctuation are
 * removed before comparing; the rate is the edit distance over reference phonemes.
 */
import { join } from "node:path";
import { normalizeText } from "../../../src/text/normalize";
import { phonemize } from "../../../src/text/g2p";

/** A fixed set: everyday prose, names, numbers, dates and abbreviations. */
export const SENTENCES = [
  "The quick brown fox jumps over the lazy dog.",
  "She sells seashells by the seashore every summer.",
  "Please call me back when you get this message.",
  "The weather forecast says it will rain tomorrow afternoon.",
  "I would like a cup of coffee with a little milk.",
  "Our meeting has been moved to Thursday at three o'clock.",
  "The children played in the garden until it got dark.",
  "He bought a new bicycle and rode it to work.",
  "Reading books is one of the best ways to learn.",
  "The museum opens at nine and closes at five.",
  "Could you tell me the way to the railway station?",
  "My grandmother grew tomatoes, beans and potatoes.",
  "The orchestra played a beautiful symphony last night.",
  "Water boils at one hundred degrees Celsius at sea level.",
  "The company announced record profits for the third quarter.",
  "They walked along the river and watched the boats.",
  "Scientists discovered a new species of butterfly in the forest.",
  "The library is quiet, so please keep your voice down.",
  "Her favorite color is blue, but she also likes green.",
  "We are planning a trip to the mountains next month.",
  "The doctor said I should drink more water every day.",
  "Technology changes the way people communicate with each other.",
  "The little dog barked at the mailman through the window.",
  "After dinner, we usually take a short walk around the block.",
  "The answer to the question was surprisingly simple.",
  "Birds were singing in the trees early in the morning.",
  "The teacher asked the students to write an essay about their holidays.",
  "It was the best of times, it was the worst of times.",
  "The new restaurant downtown serves excellent Italian food.",
  "Exercise regularly and eat plenty of fresh vegetables.",
  "The train to Boston leaves at 6:45 pm from platform 4.",
  "The population of the city grew to 2,500,000 by 2019.",
  "Dr. Smith lives at 221 Baker Street with her two cats.",
  "The package weighs 3.5 kg and costs $12.99.",
  "World War II ended in 1945.",
  "Is it really true that nobody noticed the mistake?",
  "The engineer explained how the bridge was designed.",
  "A thousand stars were shining above the quiet village.",
  "The committee will review the proposal and decide next week.",
  "Please remember to turn off the lights before leaving.",
  "The ancient castle stood on a hill overlooking the sea.",
  "Laughter is often the best medicine for a tired mind.",
  "The computer crashed just before I saved the document.",
  "Every morning he runs five miles through the park.",
  "The painting was sold for an enormous amount of money.",
  "We watched the sunset from the top of the lighthouse.",
  "Honesty and kindness are qualities that everyone admires.",
  "The farmer fed the chickens and milked the cows.",
  "Would you rather travel by plane or by train?",
  "Thank you very much for your help and patience.",
];

const STRIP = /[ˈˌ\s.,;:!?—…"“”()'-]/g;

/** Phonemes as compared: no stress, spaces or punctuation; misaki's length marks kept. */
export function comparable(phonemes: string): string[] {
  return [...phonemes.replace(STRIP, "")];
}

export function editDistance(a: readonly string[], b: readonly string[]): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** misaki's espeak fallback mapping (espeak-ng IPA → Kokoro's phoneme set), longest first. */
const E2M: [string, string][] = (
  [
    ["ʔˌn̩", "ʔn"], ["ʔn̩", "ʔn"], ["aɪ", "I"], ["aʊ", "W"], ["dʒ", "ʤ"], ["eɪ", "A"], ["e", "A"], ["tʃ", "ʧ"], ["ɔɪ", "Y"],
    ["əl", "ᵊl"], ["ʲo", "jo"], ["ʲə", "jə"], ["ʲ", ""], ["ɚ", "əɹ"], ["r", "ɹ"], ["x", "k"], ["ç", "k"], ["ɐ", "ə"],
    ["ɬ", "l"], ["\u0303", ""], ["oʊ", "O"], ["ɜːɹ", "ɜɹ"], ["ɜː", "ɜɹ"], ["ɪə", "iə"], ["ː", ""], ["ɾ", "T"], ["ʔ", "t"],
  ] as [string, string][]
).sort((a, b) => b[0].length - a[0].length);

export function espeakToKokoro(ipa: string): string {
  let out = "";
  for (let i = 0; i < ipa.length; ) {
    const hit = E2M.find(([from]) => ipa.startsWith(from, i));
    if (hit) {
      out += hit[1];
      i += hit[0].length;
    } else out += ipa[i++];
  }
  return out.replace(/(\S)\u0329/g, "ᵊ$1").replace(/o/g, "ɔ");
}

async function lines(cmd: string[], input: string[], env: Record<string, string | undefined> = process.env): Promise<string[] | null> {
  try {
    const p = Bun.spawn(cmd, { stdin: "pipe", stdout: "pipe", stderr: "pipe", env });
    p.stdin.write(input.join("\n") + "\n");
    await p.stdin.end();
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    if (code !== 0) return null;
    return out.split("\n").filter((l) => l.length > 0);
  } catch {
    return null;
  }
}

export interface G2pReference {
  name: string;
  phonemes: string[];
}

export async function misakiReference(texts: string[]): Promise<G2pReference | string> {
  const python = process.env.MISAKI_PYTHON;
  if (!python) return "misaki: not measured (set MISAKI_PYTHON to a Python with misaki[en]; SPACY_EN_MODEL if en_core_web_sm is installed under another name)";
  const out = await lines([python, join(import.meta.dir, "misaki_g2p.py")], texts);
  if (!out || out.length !== texts.length) return `misaki: not measured (${python} could not run misaki)`;
  return { name: "misaki", phonemes: out.map((l) => JSON.parse(l) as string) };
}

export async function espeakReference(texts: string[]): Promise<G2pReference | string> {
  const out: string[] = [];
  for (const t of texts) {
    // One call per sentence: espeak-ng breaks its output at clause ends, which would misalign lines.
    const r = await lines(["espeak-ng", "-q", "--ipa", "-v", "en-us", t], []);
    if (!r) return "espeak-ng: not measured (install the Debian package espeak-ng)";
    out.push(espeakToKokoro(r.join(" ")));
  }
  return { name: "espeak-ng", phonemes: out };
}

export interface PerResult {
  reference: string;
  errors: number;
  phonemes: number;
  rate: number;
  /** The sentences with the most errors, for reading. */
  worst: { text: string; ours: string; theirs: string; errors: number }[];
}

export function phonemeErrorRate(texts: string[], ours: string[], ref: G2pReference): PerResult {
  let errors = 0;
  let total = 0;
  const rows = texts.map((text, i) => {
    const a = comparable(ours[i]!);
    const b = comparable(ref.phonemes[i]!);
    const e = editDistance(a, b);
    errors += e;
    total += b.length;
    return { text, ours: ours[i]!, theirs: ref.phonemes[i]!, errors: e };
  });
  return { reference: ref.name, errors, phonemes: total, rate: errors / Math.max(1, total), worst: rows.sort((x, y) => y.errors - x.errors).slice(0, 5) };
}

/** The sentences as both sides see them, and our phonemes for them. */
export function ourPhonemes(): { texts: string[]; phonemes: string[] } {
  const texts = SENTENCES.map((s) => normalizeText(s, "us"));
  return { texts, phonemes: texts.map((t) => phonemize(t, "us")) };
}

/** Prints the phoneme error rate against each reference that is present. */
export async function benchPhonemes(): Promise<void> {
  const { texts, phonemes } = ourPhonemes();
  console.log(`\n## phoneme error rate of the English front end (${texts.length} fixed sentences, stress, spaces and punctuation removed; target ≤ 3%)\n`);
  for (const ref of [await misakiReference(texts), await espeakReference(texts)]) {
    if (typeof ref === "string") {
      console.log(ref);
      continue;
    }
    const r = phonemeErrorRate(texts, phonemes, ref);
    console.log(`against ${r.reference}: ${(r.rate * 100).toFixed(2)}% (${r.errors} edits over ${r.phonemes} phonemes)`);
    if (process.env.BENCH_VERBOSE) for (const w of r.worst) console.log(`  ${w.errors}  ${w.text}\n     ours:   ${w.ours}\n     theirs: ${w.theirs}`);
  }
}
