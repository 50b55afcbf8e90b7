/**
 * The token-counting worker thread (see token-counter.ts). Short jobs are answered as soon as
 * they arrive; long ones are counted in steps, one after another, and between steps the thread
 * takes in new messages, so a short job never waits behind a long one for more than a step
 * (a few milliseconds). A cancelled job is dropped, even half-counted.
 */
import { countTexts, countTextsSteps, SHORT_JOB_CHARS, textLength } from "./tokens";

export type TokenJob =
  | { id: number; texts: string[]; limit: number | null }
  /** A long job sent in parts (each cut where counting it apart changes nothing): `more` until the last. */
  | { id: number; part: string; more: boolean; limit: number | null }
  | { cancel: number }
  | { background: true };
export type TokenReply = { ready: true } | { id: number; count: number } | { id: number; error: string };

declare const self: Worker;

/** The long lane's niceness: about a tenth of the CPU a busy serving thread gets, when both want it. */
const BACKGROUND_NICE = 10;
/** A long job gives way to messages after this much counting. */
const SLICE_MS = 4;

const reply = (r: TokenReply) => self.postMessage(r);
const waiting: { id: number; texts: string[]; limit: number }[] = [];
const cancelled = new Set<number>();
/** The parts so far of jobs sent in parts. */
const partial = new Map<number, string[]>();
let running = false;

self.onmessage = (e: MessageEvent<TokenJob>) => {
  const job = e.data;
  if ("cancel" in job) {
    if (!partial.delete(job.cancel)) cancelled.add(job.cancel);
    return;
  }
  if ("background" in job) return lowerPriority();
  if ("part" in job) {
    const texts = partial.get(job.id) ?? [];
    texts.push(job.part);
    if (job.more) partial.set(job.id, texts);
    else {
      partial.delete(job.id);
      waiting.push({ id: job.id, texts, limit: job.limit ?? Infinity });
      if (!running) void countLongJobs();
    }
    return;
  }
  const limit = job.limit ?? Infinity;
  if (textLength(job.texts) <= SHORT_JOB_CHARS) {
    try {
      reply({ id: job.id, count: countTexts(job.texts, limit) });
    } catch (err) {
      reply({ id: job.id, error: String((err as Error)?.message ?? err) });
    }
    return;
  }
  waiting.push({ id: job.id, texts: job.texts, limit });
  if (!running) void countLongJobs();
};

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

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function countLongJobs(): Promise<void> {
  running = true;
  let job: (typeof waiting)[number] | undefined;
  while ((job = waiting.shift())) {
    if (cancelled.delete(job.id)) continue;
    try {
      const steps = countTextsSteps(job.texts, job.limit);
      let sliceStart = performance.now();
      let r = steps.next();
      while (!r.done) {
        if (performance.now() - sliceStart >= SLICE_MS) {
          await nextTurn();
          if (cancelled.delete(job.id)) break;
          sliceStart = performance.now();
        }
        r = steps.next();
      }
      if (r.done) reply({ id: job.id, count: r.value });
    } catch (err) {
      reply({ id: job.id, error: String((err as Error)?.message ?? err) });
    }
  }
  running = false;
}

// Loads the tokenizer now, then tells the counter this thread is up: a worker that dies before
// this message was never started (its file was not found), as opposed to one that crashed.
countTexts(["warm up"]);
reply({ ready: true });
