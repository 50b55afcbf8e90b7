/**
 * A local stand-in for PyPI's JSON API and file host, for `runtime pull` tests: it serves
 * /pypi/<package>/json listing the wheels it holds (relative URLs, as mirrors write them) and
 * the files themselves with HTTP Range. It can cut a file's first download short to test resuming,
 * serve a body that does not end (a hostile mirror), and list a file under any link.
 */
export interface PackageIndex {
  url: string;
  /** Range headers received per file. */
  ranges: Map<string, (string | null)[]>;
  /** Cut the next download of this file after this many bytes. */
  cutAfter: Map<string, number>;
  /** Files served as a body that does not end (it stops at ENDLESS_BOUND, so a client that never stops still finishes). */
  endless: Set<string>;
  /** Bytes of each endless body the client took. */
  endlessSent: Map<string, number>;
  /** The link the JSON document gives for a file, instead of its relative one. */
  linkOf: Map<string, string>;
  stop(): void;
}

/** Where an "endless" body does end (64 MiB): far past any test wheel. */
export const ENDLESS_BOUND = 64 * 1024 * 1024;

export function startPackageIndex(wheels: { package: string; version: string; filename: string; bytes: Uint8Array }[]): PackageIndex {
  const index: PackageIndex = { url: "", ranges: new Map(), cutAfter: new Map(), endless: new Set(), endlessSent: new Map(), linkOf: new Map(), stop: () => server.stop(true) };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      const doc = /^\/pypi\/([^/]+)\/json$/.exec(path);
      if (doc) {
        const mine = wheels.filter((w) => w.package === doc[1]);
        if (mine.length === 0) return new Response("not found", { status: 404 });
        const releases: Record<string, { filename: string; url: string }[]> = {};
        for (const w of mine) (releases[w.version] ??= []).push({ filename: w.filename, url: index.linkOf.get(w.filename) ?? `../../files/${w.filename}` });
        return Response.json({ info: { name: doc[1] }, releases });
      }
      const file = /^\/files\/(.+)$/.exec(path);
      const wheel = file ? wheels.find((w) => w.filename === file[1]) : undefined;
      if (!wheel) return new Response("not found", { status: 404 });
      if (index.endless.has(wheel.filename)) {
        // The pinned bytes, then more, in 64 KiB pieces, for as long as they are read.
        const piece = new Uint8Array(64 * 1024).fill(7);
        let sent = 0;
        const stream = new ReadableStream({
          pull(c) {
            if (sent >= ENDLESS_BOUND) return c.close();
            const chunk = sent < wheel.bytes.length ? wheel.bytes.subarray(sent, sent + piece.length) : piece;
            sent += chunk.length;
            index.endlessSent.set(wheel.filename, sent);
            c.enqueue(chunk);
          },
        }, { highWaterMark: 0 });
        return new Response(stream, { status: 200 });
      }
      const range = req.headers.get("range");
      index.ranges.set(wheel.filename, [...(index.ranges.get(wheel.filename) ?? []), range]);
      const from = range ? Number(/bytes=(\d+)-/.exec(range)![1]) : 0;
      const body = wheel.bytes.subarray(from);
      const cut = index.cutAfter.get(wheel.filename);
      if (cut !== undefined) {
        index.cutAfter.delete(wheel.filename);
        // Announce the whole length, send part of it, then end: the client sees an early close.
        let sent = false;
        const stream = new ReadableStream({
          async pull(c) {
            if (!sent) return void ((sent = true), c.enqueue(body.subarray(0, cut)));
            // The bytes are on their way; then the connection breaks.
            await Bun.sleep(100);
            c.error(new Error("cut"));
          },
        });
        return new Response(stream, { status: range ? 206 : 200, headers: { "content-length": String(body.length), ...(range ? { "content-range": `bytes ${from}-${wheel.bytes.length - 1}/${wheel.bytes.length}` } : {}) } });
      }
      return new Response(Buffer.from(body), { status: range ? 206 : 200, headers: range ? { "content-range": `bytes ${from}-${wheel.bytes.length - 1}/${wheel.bytes.length}` } : {} });
    },
  });
  index.url = `http://127.0.0.1:${server.port}`;
  return index;
}
