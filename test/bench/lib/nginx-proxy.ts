/**
 * nginx as the reference proxy of the hot-path bench: one process (master_process off, one worker
 * in it), keep-alive to the upstream, no access log, no buffering (streams pass chunk by chunk, as
 * Switchyard relays them). Only when an nginx binary is installed (BENCH_NGINX, else `nginx` on
 * the PATH or /usr/sbin/nginx; Debian: `apt-get install nginx-light`): the project never needs it.
 */
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type Proc } from "./processes";

export function nginxBinary(): string | null {
  const candidates = [process.env.BENCH_NGINX, Bun.which("nginx"), "/usr/sbin/nginx"];
  return candidates.find((c): c is string => typeof c === "string" && c.length > 0 && existsSync(c)) ?? null;
}

export async function startNginxProxy(binary: string, upstreamUrl: string): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-bench-nginx-"));
  for (const d of ["body", "proxy"]) mkdirSync(join(dir, d));
  const upstream = new URL(upstreamUrl);
  const port = freePort();
  writeFileSync(
    join(dir, "nginx.conf"),
    `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr error;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  upstream up { server ${upstream.hostname}:${upstream.port}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`,
  );
  const proc = Bun.spawn([binary, "-p", dir, "-c", join(dir, "nginx.conf")], { stdout: "inherit", stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`nginx exited with ${proc.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then((r) => (r.body?.cancel(), true), () => false);
    if (ok) break;
    if (i > 200) throw new Error("nginx did not answer");
    await Bun.sleep(25);
  }
  return {
    url,
    proc,
    async stop() {
      proc.kill("SIGQUIT");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

