/**
 * The token-counting worker thread (see token-counter.ts). Every job is queued in its account's
 * lane and counted in steps of about STEP_CHARS characters, the accounts taking turns (see
 * queue.ts): one account's backlog of long counts delays another account's count by a step per
 * turn (a few milliseconds), never by the backlog. Between steps the thread takes in new
 * messages; a cancelled job is dropped, even half-counted. With nothing else queued a job is
 * counted at once, on arrival.
 */
import { countTexts, countTextsSteps } from "./tokens";
import { FairQueue } from "./queue";
import { collectFullAndTrim, GcPacer } from "../runtime/memory";
import { DutyCycle } from "./duty-cycle";

export type TokenJob =
  | { id: number; account: string; texts: string[]; limit: number | null }
  /** A long job sent in parts (each cut where counting it apart changes nothing): `more` until the last. */
  | { id: number; account: string; part: string; more: boolean; limit: number | null }
  | { cancel: number }
  /** This worker runs the long lane: lower priority, and at most `percent` of a core over time. */
  | { background: true; percent: number };
export type TokenReply = { ready: true } | { id: number; count: number } | { id: number; error: string };

declare const self: Worker;

/** The long lane's niceness: about a tenth of the CPU a busy serving thread gets, when both want it. */
const BACKGROUND_NICE = 10;
/** Work the long lane may do at full speed before its share applies: a 1 MB prompt of prose. */
const BACKGROUND_BURST_MS = 250;
/**
 * Characters counted in one turn: a few milliseconds even of text that is slow to count (random
 * base64, about 1 MB/s), so another account's job waits that long per turn of a backlog.
 */
const STEP_CHARS = 4 * 1024;
/**
 * Characters counted between collections of this thread's young garbage: each counted part is a
 * copy of the text and leaves the tokenizer's work behind (see runtime/memory.ts, GcPacer).
 */
const COUNT_EDEN_CHARS = 64 * 1024;
const countGarbage = new GcPacer(COUNT_EDEN_CHARS);
/**
 * Characters counted between full collections of this thread's heap. A long job is counted over
 * many turns, so the young collections above promote its text to the old generation, and the
 * heap's own policy — scaled to the tokenizer's tables — let ~130 MB of such dead parts pile up
 * while 40 streams of 2 MB were counted. A full collection here takes ~10 ms (counting 4 Mi
 * characters takes several hundred), on this thread, never the serving thread.
 */
const COUNT_FULL_GC_CHARS = 4 * 1024 * 1024;
const countedParts = new GcPacer(COUNT_FULL_GC_CHARS, collectFullAndTrim);

interface Queued {
  id: number;
  account: string;
  texts: string[];
  limit: number;
  steps: Generator<void, number> | null;
}

const reply = (r: TokenReply) => self.postMessage(r);
const queue = new FairQueue<Queued>();
const queued = new Map<number, Queued>();
/** The parts so far of jobs sent in parts. */
const partial = new Map<number, string[]>();
let running = false;
/** The long lane's share of a core (see duty-cycle.ts); null in the short lane, which never rests. */
let duty: DutyCycle | null = null;

self.onmessage = (e: MessageEvent<TokenJob>) => {
  const job = e.data;
  if ("cancel" in job) {
    if (partial.delete(job.cancel)) return;
    const q = queued.get(job.cancel);
    if (q) {
      queued.delete(q.id);
      queue.remove(q.account, q);
    }
    return;
  }
  if ("background" in job) {
    duty = new DutyCycle(job.percent, BACKGROUND_BURST_MS);
    return lowerPriority();
  }
  if ("part" in job) {
    const texts = partial.get(job.id) ?? [];
    texts.push(job.part);
    if (job.more) partial.set(job.id, texts);
    else {
      partial.delete(job.id);
      enqueue({ id: job.id, account: job.account, texts, limit: job.limit ?? Infinity, steps: null });
    }
    return;
  }
  enqueue({ id: job.id, account: job.account, texts: job.texts, limit: job.limit ?? Infinity, steps: null });
};

function enqueue(job: Queued): void {
  queued.set(job.id, job);
  queue.push(job.account, job);
  if (!running) void countQueued();
}

/**
 * Makes this thread yield the CPU to the serving thread when both want it (Linux: setpriority on
 * the calling thread only; 10 rather than 19, which would starve it on a busy machine). Long
 * counts are background work: a busy machine should slow them, not the requests the serving
 * thread is answering. Where this is not possible, nothing changes.
 */
function lowerPriority(): void {
  try {
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", { setpriority: { args: [FFIType.i32, FFIType.u32, FFIType.i32], returns: FFIType.i32 } });
    libc.symbols.setpriority(0 /* PRIO_PROCESS */, 0 /* this thread */, BACKGROUND_NICE);
    libc.close();
  } catch {
    // not Linux with glibc: counting keeps the default priority
  }
}

const textLength = (texts: string[]) => {
  let n = 0;
  for (const t of texts) n += t.length;
  return n;
};

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** One step of the job whose turn it is, then the next account's; messages are taken in between. */
async function countQueued(): Promise<void> {
  running = true;
  let job: Queued | undefined;
  while ((job = queue.peek())) {
    let done = true;
    let rest = 0;
    try {
      job.steps ??= countTextsSteps(job.texts, job.limit, STEP_CHARS);
      const started = performance.now();
      const r = job.steps.next();
      rest = duty?.worked(performance.now() - started) ?? 0;
      if (r.done) {
        reply({ id: job.id, count: r.value });
        const chars = textLength(job.texts);
        countGarbage.made(chars);
        countedParts.made(chars);
      } else done = false;
    } catch (err) {
      reply({ id: job.id, error: String((err as Error)?.message ?? err) });
    }
    if (done) queued.delete(job.id);
    queue.turn(done);
    // Messages (new jobs, cancellations) are taken in while resting too.
    if (rest > 0) await Bun.sleep(rest);
    else if (queue.size > 0) await nextTurn();
  }
  running = false;
}

// Loads the tokenizer now, then tells the counter this thread is up: a worker that dies before
// this message was never started (its file was not found), as opposed to one that crashed.
countTexts(["warm up"]);
reply({ ready: true });
