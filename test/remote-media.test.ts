/**
 * Remote media URLs (docs/chat.md, "Remote media"): by default the gateway fetches them itself and hands
 * the engine a data: URL, so the engine never fetches from inside the operator's network. Refused
 * before any connection: loopback, link-local (cloud metadata), private, IPv6 loopback,
 * IPv4-mapped IPv6, and names resolving to any of them. Fetches go to exactly the address
 * resolved once, follow no redirects, and are capped in bytes and time. SWITCHYARD_REMOTE_MEDIA
 * can refuse remote media or pass it through. The media host is a loopback server that records
 * its connections; host names resolve through the server's resolver hook, the address policy
 * being the product's own (the happy path allows 127.0.0.1 with SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat } from "./support/chat-client";
import { startMediaServer, type MediaReply, type MediaServer } from "./support/media-server";
import { ledgerState, settled } from "./support/ledger-state";
import { loadSharp } from "../src/images/sharp";

const VISION = "qwen3-vl-235b-a22b";
const sharp = loadSharp();

let pngBytes: Buffer;
let media: MediaServer;
let up: ScriptedUpstream;
/** Names the fake resolver knows, and every name it was asked. */
const names: Record<string, string[] | (() => string[])> = {};
const lookups: string[] = [];
const lookup = async (host: string) => {
  lookups.push(host);
  const a = names[host];
  if (!a) throw new Error("ENOTFOUND");
  return typeof a === "function" ? a() : a;
};

beforeAll(async () => {
  pngBytes = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#3366cc" } }).png().toBuffer();
  media = startMediaServer((path): MediaReply => {
    if (path.startsWith("/cat.png")) return { status: 200, headers: { "content-type": "image/png" }, body: pngBytes };
    if (path === "/clip.wav") return { status: 200, headers: { "content-type": "audio/wav" }, body: "RIFF0000WAVEfmt " };
    if (path === "/page.html") return { status: 200, headers: { "content-type": "text/html" }, body: "<html></html>" };
    if (path === "/redirect") return { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } };
    if (path === "/big.png") return { status: 200, headers: { "content-type": "image/png" }, body: new Uint8Array(9000) };
    if (path === "/slow.png") return { stall: true };
    if (path === "/3k.wav") return { status: 200, headers: { "content-type": "audio/wav" }, body: new Uint8Array(3000) };
    return { status: 404 };
  });
  up = startScripted((b) => okJson(b, "seen"));
});
afterAll(() => {
  media.stop();
  up.stop();
});
beforeEach(() => {
  up.requests.length = 0;
  media.requests.length = 0;
  lookups.length = 0;
});

const part = (type: string, url: string) => ({ type, [type]: { url } });
const chat = (...parts: unknown[]) => ({ model: VISION, messages: [{ role: "user", content: [{ type: "text", text: "look" }, ...parts] }] });
const sentPart = (j = 1) => up.requests.at(-1)!.messages[0].content[j];

async function expect400(h: Harness, key: string, body: Record<string, unknown>, param: string, words: string[]) {
  const res = await postChat(h.base, key, body);
  expect(res.status).toBe(400);
  const err = (await res.json()).error;
  expect(err.param).toBe(param);
  for (const w of words) expect(err.message).toContain(w);
  expect(up.requests.length).toBe(0);
  return err;
}

describe("fetch (the default), nothing allow-listed: non-public hosts are refused before any connection", () => {
  let h: Harness;
  let acct: { id: string; key: string };
  beforeAll(async () => {
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: up.url }, { mediaLookup: lookup });
    acct = await h.account(10);
    names["localhost.media.test"] = ["127.0.0.1"];
    names["metadata.media.test"] = ["169.254.169.254"];
    names["mixed.media.test"] = ["93.184.216.34", "127.0.0.1"];
    names["v6.media.test"] = ["::1"];
  });
  afterAll(() => h.stop());

  const refusedUrls = () => [
    media.url("/cat.png"),
    media.url("/cat.png", "localhost.media.test"),
    media.url("/cat.png", "mixed.media.test"),
    media.url("/cat.png", "v6.media.test"),
    media.url("/cat.png", "[::ffff:127.0.0.1]"),
    media.url("/cat.png", "[::1]"),
    media.url("/cat.png", "2130706433"), // 127.0.0.1 as one number
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://metadata.media.test/latest/meta-data/",
    "http://10.0.0.1/cat.png",
    "http://[fd00::1]/cat.png",
    "http://0.0.0.0:80/cat.png",
  ];

  for (const type of ["image_url", "audio_url", "video_url"]) {
    test(`${type}: every non-public URL → 400 naming the part; no connection, nothing held or sent`, async () => {
      const before = ledgerState(h, acct.id);
      for (const url of refusedUrls()) {
        const err = await expect400(h, acct.key, chat(part(type, url)), "messages[0].content[1]", ["only from public addresses"]);
        // The resolved address is never named.
        expect(err.message).not.toContain("127.0.0.1");
        expect(err.message).not.toContain("169.254");
      }
      expect(media.connections).toBe(0);
      const after = await settled(h, acct.id);
      expect([after.balance, after.entries]).toEqual([before.balance, before.entries]);
    });
  }

  test("a name that does not resolve, and schemes other than data: and http(s) → 400", async () => {
    await expect400(h, acct.key, chat(part("image_url", "http://nowhere.media.test/x.png")), "messages[0].content[1]", ["does not resolve"]);
    await expect400(h, acct.key, chat(part("image_url", "file:///etc/passwd")), "messages[0].content[1]", ["data: URL or an http(s) URL"]);
    await expect400(h, acct.key, chat(part("video_url", "ftp://example.com/a.mp4")), "messages[0].content[1].video_url.url", ["data: URL or an http(s) URL"]);
    expect(media.connections).toBe(0);
  });

  test("a part without a type that carries a media URL → 400 (engines would guess its type and fetch it)", async () => {
    for (const p of [{ image_url: { url: "http://169.254.169.254/" } }, { audio_url: "http://169.254.169.254/" }]) {
      const res = await postChat(h.base, acct.key, chat(p));
      expect(res.status).toBe(400);
      expect((await res.json()).error.param).toStartWith("messages[0].content");
    }
    expect(up.requests.length).toBe(0);
  });

  test("input_audio is inline: its shape is checked and nothing is fetched", async () => {
    const ok = await postChat(h.base, acct.key, chat({ type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }));
    expect(ok.status).toBe(200);
    expect(sentPart()).toEqual({ type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } });
    up.requests.length = 0;
    await expect400(h, acct.key, chat({ type: "input_audio", input_audio: { url: "http://169.254.169.254/" } }), "messages[0].content[1].input_audio.data", ["base64"]);
  });
});

describe("fetch, with the media host's address allow-listed (SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS=127.0.0.1)", () => {
  let h: Harness;
  let acct: { id: string; key: string };
  beforeAll(async () => {
    h = await startHarness(
      { SWITCHYARD_UPSTREAM_URL: up.url, SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS: "127.0.0.1", SWITCHYARD_REMOTE_MEDIA_MAX_BYTES: "4096", SWITCHYARD_REMOTE_MEDIA_TIMEOUT_MS: "300" },
      { mediaLookup: lookup },
    );
    acct = await h.account(10);
    names["cdn.media.test"] = ["127.0.0.1"];
    // Answers 127.0.0.1 once, then the metadata address: a second lookup would rebind.
    let n = 0;
    names["rebind.media.test"] = () => (n++ === 0 ? ["127.0.0.1"] : ["169.254.169.254"]);
  });
  afterAll(() => h.stop());

  test("an image URL is fetched by the gateway, normalised, and the engine gets a data: URL", async () => {
    const res = await postChat(h.base, acct.key, chat({ type: "image_url", image_url: { url: media.url("/cat.png?size=large", "cdn.media.test"), detail: "low" } }));
    expect(res.status).toBe(200);
    const sent = sentPart();
    expect(sent.image_url.detail).toBe("low");
    expect(sent.image_url.url.startsWith("data:image/jpeg;base64,")).toBe(true);
    const meta = await sharp(Buffer.from(sent.image_url.url.slice(sent.image_url.url.indexOf(",") + 1), "base64")).metadata();
    expect([meta.width, meta.height]).toEqual([40, 30]);
    expect(media.requests).toEqual([{ method: "GET", path: "/cat.png?size=large", host: `cdn.media.test:${media.port}` }]);
  });

  test("the host is resolved once and the connection goes to that address (no DNS rebinding)", async () => {
    const res = await postChat(h.base, acct.key, chat(part("image_url", media.url("/cat.png", "rebind.media.test"))));
    expect(res.status).toBe(200);
    expect(lookups).toEqual(["rebind.media.test"]);
    expect(media.requests.map((r) => r.host)).toEqual([`rebind.media.test:${media.port}`]);
  });

  test("audio_url is fetched and passed on as a data: URL of its type; video_url answering HTML → 400", async () => {
    expect((await postChat(h.base, acct.key, chat(part("audio_url", media.url("/clip.wav"))))).status).toBe(200);
    expect(sentPart()).toEqual({ type: "audio_url", audio_url: { url: `data:audio/wav;base64,${Buffer.from("RIFF0000WAVEfmt ").toString("base64")}` } });
    up.requests.length = 0;
    await expect400(h, acct.key, chat(part("video_url", media.url("/page.html"))), "messages[0].content[1]", ["content type 'text/html'", "not video"]);
  });

  test("a redirect is not followed: 400, and its target is never asked", async () => {
    const before = media.connections;
    await expect400(h, acct.key, chat(part("image_url", media.url("/redirect"))), "messages[0].content[1]", ["redirect (302)", "not followed"]);
    expect(media.connections).toBe(before + 1);
    expect(media.requests.map((r) => r.path)).toEqual(["/redirect"]);
  });

  test("a body over SWITCHYARD_REMOTE_MEDIA_MAX_BYTES → 400; a host that stalls → 400 once the time cap passes", async () => {
    await expect400(h, acct.key, chat(part("image_url", media.url("/big.png"))), "messages[0].content[1]", ["larger than the limit of 4096 bytes"]);
    await expect400(h, acct.key, chat(part("image_url", media.url("/slow.png"))), "messages[0].content[1]", ["was not fetched within the time allowed (300 ms)"]);
  });

  test("SWITCHYARD_REMOTE_MEDIA_MAX_BYTES bounds all of a request's fetches together", async () => {
    const wav = part("audio_url", media.url("/3k.wav"));
    expect((await postChat(h.base, acct.key, chat(wav))).status).toBe(200);
    up.requests.length = 0;
    await expect400(h, acct.key, chat(wav, wav), "messages[0].content[2]", ["over the limit of 4096 bytes per request"]);
  });

  test("a host answering 404 → 400 naming the part; allow-listing 127.0.0.1 opens no other special address", async () => {
    await expect400(h, acct.key, chat(part("image_url", media.url("/missing.png"))), "messages[0].content[1]", ["answered 404"]);
    await expect400(h, acct.key, chat(part("image_url", "http://169.254.169.254/")), "messages[0].content[1]", ["only from public addresses"]);
    await expect400(h, acct.key, chat(part("image_url", media.url("/cat.png", "127.0.0.2"))), "messages[0].content[1]", ["only from public addresses"]);
  });

  test("/v1/responses input_image and /v1/messages image url sources are fetched the same way", async () => {
    const url = media.url("/cat.png", "cdn.media.test");
    const r1 = await fetch(h.base + "/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: VISION, store: false, input: [{ role: "user", content: [{ type: "input_image", image_url: url }] }] }),
    });
    expect(r1.status).toBe(200);
    const r2 = await fetch(h.base + "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": acct.key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: VISION, max_tokens: 50, messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url } }] }] }),
    });
    expect(r2.status).toBe(200);
    expect(up.requests.length).toBe(2);
    for (const req of up.requests) {
      const parts = req.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []));
      const image = parts.find((p: any) => p.type === "image_url");
      expect(image.image_url.url.startsWith("data:image/jpeg;base64,")).toBe(true);
    }
    expect(media.requests.length).toBe(2);
  });
});

describe("SWITCHYARD_REMOTE_MEDIA=refuse and =passthrough", () => {
  let refuse: Harness;
  let pass: Harness;
  let a: { id: string; key: string };
  let b: { id: string; key: string };
  beforeAll(async () => {
    refuse = await startHarness({ SWITCHYARD_UPSTREAM_URL: up.url, SWITCHYARD_REMOTE_MEDIA: "refuse" }, { mediaLookup: lookup });
    pass = await startHarness({ SWITCHYARD_UPSTREAM_URL: up.url, SWITCHYARD_REMOTE_MEDIA: "passthrough" }, { mediaLookup: lookup });
    a = await refuse.account(10);
    b = await pass.account(10);
  });
  afterAll(async () => {
    await refuse.stop();
    await pass.stop();
  });

  test("refuse: a remote URL of any media type → 400 naming the part; data: images still work", async () => {
    const before = media.connections;
    for (const type of ["image_url", "audio_url", "video_url"]) {
      const err = await expect400(refuse, a.key, chat(part(type, "https://images.example.com/a")), "messages[0].content[1]", ["remote media URLs are not accepted", "data: URL"]);
      expect(err.code).toBe("remote_media_refused");
    }
    const data = `data:image/png;base64,${pngBytes.toString("base64")}`;
    expect((await postChat(refuse.base, a.key, chat(part("image_url", data)))).status).toBe(200);
    expect(media.connections).toBe(before);
    expect(lookups).toEqual([]);
  });

  test("passthrough: remote URLs reach the engine untouched, nothing fetched", async () => {
    const before = media.connections;
    const parts = [part("image_url", "https://images.example.com/cat.png?size=large"), part("audio_url", "https://cdn.example.com/a.wav"), part("video_url", "https://cdn.example.com/v.mp4")];
    expect((await postChat(pass.base, b.key, chat(...parts))).status).toBe(200);
    expect(up.requests.at(-1)!.messages[0].content.slice(1)).toEqual(parts);
    expect(media.connections).toBe(before);
    expect(lookups).toEqual([]);
  });
});
