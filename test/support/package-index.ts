/**
 * A local stand-in for PyPI's JSON API and file host, for `runtime pull` tests: it serves
 * /pypi/<package>/json listing the wheels it holds (relative URLs, as mirrors write them) and
 * the files themselves with HTTP Range. It can cut a file's first download short to test resuming.
 */
export interface PackageIndex {
  url: string;
  /** Range headers received per file. */
  ranges: Map<string, (string | null)[]>;
  /** Cut the next download of this file after this many bytes. */
  cutAfter: Map<string, number>;
  stop(): void;
}

export function startPackageIndex(wheels: { package: string; version: string; filename: string; bytes: Uint8Array }[]): PackageIndex {
  const index: PackageIndex = { url: "", ranges: new Map(), cutAfter: new Map(), stop: () => server.stop(true) };
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
        for (const w of mine) (releases[w.version] ??= []).push({ filename: w.filename, url: `../../files/${w.filename}` });
        return Response.json({ info: { name: doc[1] }, releases });
      }
      const file = /^\/files\/(.+)$/.exec(path);
      const wheel = file ? wheels.find((w) => w.filename === file[1]) : undefined;
      if (!wheel) return new Response("not found", { status: 404 });
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
