/**
 * A server run as its own process whose ledger fsync fails (EIO) while the file named by
 * FSYNC_FAILS_WHEN exists — as a disk that lost a write-back would report it. Nothing replaces the
 * product's reaction: the test watches the process stop. Prints `{"url": ...}` first.
 */
import { existsSync, fsync } from "node:fs";
import { loadConfig } from "../../src/config";
import { startServer } from "../../src/server";
import { serveUntilKilled } from "./serve-until-killed";

const flag = process.env.FSYNC_FAILS_WHEN;
if (!flag) throw new Error("FSYNC_FAILS_WHEN is required");
const server = await startServer(loadConfig(process.env), {
  ledger: {
    fsync: (fd, cb) => (existsSync(flag) ? cb(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" })) : fsync(fd, cb)),
  },
});
serveUntilKilled(server.url, () => void server.stop());
