/**
 * POST /v1/audio/speech (voice-82m, voice-82m-turbo) and GET /v1/audio/voices.
 *
 * Order of work: authenticate, validate (400 naming the field), resolve the model (404 /
 * wrong_endpoint / 503), plan the chunks, reserve the full price (402), synthesise the first
 * chunk, then stream: one metered call (metering/), charged per input code point — the whole input
 * when the stream completes, the characters whose audio the client took when it leaves early,
 * nothing when synthesis fails or the client leaves before any audio. Streams cannot carry
 * x-request-cost (headers go out before the end); the exact charge is in GET /v1/usage and the ledger.
 */
import { Type } from "@sinclair/typebox";
import { assertModelAllowed } from "../../accounts/key-controls";
import type { App } from "../route-module";
import { requestIdOf } from "../request-context";
import type { RouteDocs } from "../route-docs";
import { authenticate, holdKey, type KeyAuthDeps } from "../auth";
import type { Ledger } from "../../billing/ledger";
import type { EngineRegistry } from "../../engines/registry";
import type { Log } from "../../log";
import { assertModelEndpoint, resolveModel, type ModelResolver } from "../../catalog/resolve";
import { validate } from "../../validate";
import { DomainError, InternalError, clientGone, invalidField, modelUnavailable } from "../../errors";
import { codePoints, priceNote, speechCost } from "../../billing/prices";
import { meterWhole, openMetered, type CallSpec } from "../../metering/metered-call";
import { runMeteredStream } from "../../metering/metered-stream";
import { producerStream } from "../../metering/producer-stream";
import { createEncoder, SUPPORTED_FORMATS } from "../../audio/encoder";
import { planSpeech } from "../../text/frontend";
import { MAX_TOKENS, SAMPLE_RATE, SPEECH_MODEL_ID, type SpeechEngine } from "../../engines/speech/engine";
import { frontEndFor, voiceInfo } from "../../engines/speech/voices";
import { ClientGoneError, SPEECH_HIGH_WATER_BYTES, SPEECH_STALL_TIMEOUT_MS, startSpeechStream, synthesizeWhole, type SpeechPlan } from "../../engines/speech/stream";
import { localModelUnavailable } from "../../engines/installed";
import { timeEngine } from "../../metrics/engine-time";
import { wantsPriority } from "../../chat/request";
import { JobAbortedError, QueueFullError, SchedulerClosedError } from "../../engines/scheduler/index";

export const MAX_INPUT_CHARACTERS = 4096;

export const SpeechRequest = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.String({ minLength: 1 }),
    voice: Type.String({ minLength: 1 }),
    response_format: Type.Optional(Type.Union(SUPPORTED_FORMATS.map((f) => Type.Literal(f)))),
    speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
    stream_format: Type.Optional(Type.Union([Type.Literal("audio")])),
    /** Kokoro-FastAPI's field: the text's language code ("a", "b"), overriding the voice's own. */
    lang_code: Type.Optional(Type.String({ minLength: 1, maxLength: 1 })),
    /** "priority" on voice-82m is the same as voice-82m-turbo (docs/local-models.md). */
    service_tier: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { additionalProperties: true },
);

const ENDPOINT = "/v1/audio/speech";

/** What the speech routes use: the caller's key and admission, the model's resolution, the engine, the ledger and the log. */
export type SpeechRouteDeps = KeyAuthDeps & ModelResolver & {
  engines: Pick<EngineRegistry, "get">;
  ledger: Ledger;
  log: Log;
};

export function registerSpeechRoutes(app: App, s: SpeechRouteDeps, docs: RouteDocs): void {
  docs.add({ method: "POST", path: ENDPOINT, summary: "Text to speech (voice-82m): streamed mp3, wav, opus (Ogg), flac or pcm (s16le 24 kHz).", auth: "key", body: SpeechRequest, produces: "audio/mpeg", public: true });
  docs.add({ method: "GET", path: "/v1/audio/voices", summary: "Voices of voice-82m; join ids with commas to blend them.", auth: "none" });

  app.get("/v1/audio/voices", () => {
    const engine = s.engines.get<SpeechEngine>(SPEECH_MODEL_ID);
    if (!engine) throw localModelUnavailable(s, SPEECH_MODEL_ID, SPEECH_MODEL_ID);
    return { object: "list", data: engine.voices.ids.map((id) => ({ object: "voice", ...voiceInfo(id), model: SPEECH_MODEL_ID })) };
  });

  app.post(ENDPOINT, async ({ body, bearer, request, set, server }) => {
    const admitted = authenticate(s, request, bearer, set);
    // Synchronous unless the store had to be asked (PostgreSQL, a key not cached): no await then.
    const caller = admitted instanceof Promise ? await admitted : admitted;
    assertModelEndpoint(s, body, "speech");
    const req = validate(SpeechRequest, body);
    const resolved = resolveModel(s, req.model, "speech", wantsPriority(req));
    assertModelAllowed(s, caller.key.models, req.model, resolved);
    const characters = codePoints(req.input);
    if (characters > MAX_INPUT_CHARACTERS) {
      throw invalidField("input", `must be at most ${MAX_INPUT_CHARACTERS} characters (Unicode code points); it has ${characters}`);
    }
    const engine = s.engines.get<SpeechEngine>(resolved.entry.id);
    if (!engine) throw localModelUnavailable(s, resolved.requestedId, resolved.entry.id);
    const voices = engine.voices.parse(req.voice);
    const format = req.response_format ?? "mp3";
    const chunks = planSpeech(req.input, frontEndFor(voices, req.lang_code), engine.vocab, MAX_TOKENS);
    // Unsupported characters are dropped; input made only of them has nothing to synthesise,
    // and silence is not worth billing.
    if (!chunks.some((c) => c.ids.length > 0)) {
      throw invalidField("input", "contains nothing that can be spoken (only characters the voice cannot pronounce)");
    }

    const requestId = requestIdOf(set);
    const spec: CallSpec = {
      requestId, accountId: caller.accountId, endpoint: ENDPOINT, model: resolved.requestedId, key: holdKey(caller), serviceTier: resolved.tier,
      budget: { characters },
      price: (u) => speechCost(resolved.entry, resolved.multiplier, u.characters ?? 0),
      priceNote: priceNote(resolved.entry, resolved.multiplier),
    };
    // A long text behind a busy queue must outlive Bun's idle timeout, from the first wait on.
    server?.timeout(request, 0);
    const encoder = await createEncoder(format, SAMPLE_RATE);
    const headers = { ...(set.headers as Record<string, string>), "content-type": encoder.contentType, "cache-control": "no-store", "x-service-tier": resolved.tier };
    const plan: SpeechPlan = { engine, chunks, voices, speed: req.speed ?? 1, priority: resolved.tier === "priority", account: caller.accountId, encoder, timed: <T>(w: Promise<T>) => timeEngine(requestId, w) };

    if (encoder.wholeFile) {
      // Sent whole (FLAC): synthesised, then charged, then sent; any failure before is an error status.
      const { value: file } = await meterWhole(s.ledger, spec, async () => ({ usage: { characters }, value: await synthesizeWhole(plan, request.signal) })).catch((err) => {
        encoder.close();
        throw startFailure(s, requestId, err);
      });
      return new Response(file as Uint8Array<ArrayBuffer>, { headers });
    }

    const { call, stream: speech } = await openMetered(s.ledger, spec, () => startSpeechStream(plan, request.signal, characters, s.log, requestId)).catch((err) => {
      encoder.close();
      throw startFailure(s, requestId, err);
    });
    const audio = producerStream({
      highWaterBytes: SPEECH_HIGH_WATER_BYTES,
      stallTimeoutMs: SPEECH_STALL_TIMEOUT_MS,
      onCancel: () => speech.cancel(),
      produce: (w) => runMeteredStream(call, w, speech, s.log),
    });
    return new Response(audio, { headers });
  });
}

function startFailure(s: { log: Log }, requestId: string, err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof QueueFullError) {
    return new DomainError("unavailable", "model_unavailable", "The speech model is at capacity. Try again shortly; this request was not billed.", "model", 1);
  }
  if (err instanceof SchedulerClosedError) return modelUnavailable(SPEECH_MODEL_ID);
  if (err instanceof JobAbortedError || err instanceof ClientGoneError) return clientGone("The client closed the request before any audio was produced; it was not billed.");
  s.log.error("speech synthesis failed", { request_id: requestId, error: String((err as Error)?.message ?? err).slice(0, 300) });
  return new InternalError("speech synthesis failed");
}
