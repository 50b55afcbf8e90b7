#!/bin/sh
# The "foundation smoke test" of a release binary in what a container image gives it: an empty
# root filesystem holding only the binary, the C/C++ runtime libraries it and its embedded native
# libraries need (what `ldd` lists: glibc, libstdc++, libgcc_s — what distroless/cc or
# debian:bookworm-slim carry), /tmp and a data directory, run as an unprivileged user with a clean
# environment. It must answer --version, pass `doctor`, start, and serve /healthz and /v1/models.
#
#   deploy/smoke-rootfs.sh dist/release/switchyard-linux-x64 [PORT]
#
# Needs root (chroot). Without root it runs the same checks from an empty directory with a clean
# environment instead, and says so. Exit status 0 when every check passed.
set -eu
bin=$(readlink -f "$1")
port=${2:-18480}
root=$(mktemp -d /tmp/switchyard-rootfs-XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  mountpoint -q "$root/proc" 2>/dev/null && umount "$root/proc"
  rm -rf "$root"
}
trap cleanup EXIT INT TERM

libs_of() { ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'; }

if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
  mode=chroot
  CHROOT=$(command -v chroot)
  chmod 755 "$root"
  cp "$bin" "$root/switchyard"
  chmod 755 "$root/switchyard"
  # The embedded libraries are extracted at run time; the libraries they need must be in the image.
  extract=$(mktemp -d)
  env -i HOME="$extract" XDG_CACHE_HOME="$extract" PATH=/usr/bin:/bin "$bin" doctor >/dev/null 2>&1 || true
  for f in "$bin" $(find "$extract" -name '*.so*' -type f); do libs_of "$f"; done | grep -v "^$extract" | sort -u | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  rm -rf "$extract"
  # The same interpreter path the binary asks for (x86-64: /lib64/ld-linux-x86-64.so.2).
  mkdir -p "$root/tmp" "$root/data" "$root/etc" "$root/proc" "$root/dev"
  chmod 1777 "$root/tmp"
  # What every container runtime provides: /proc (Bun finds its embedded code through
  # /proc/self/exe) and the basic device nodes.
  mount -t proc proc "$root/proc"
  mknod -m 666 "$root/dev/null" c 1 3
  mknod -m 666 "$root/dev/zero" c 1 5
  mknod -m 666 "$root/dev/random" c 1 8
  mknod -m 666 "$root/dev/urandom" c 1 9
  chown 65534:65534 "$root/data"
  echo "nobody:x:65534:65534:nobody:/tmp:/sbin/nologin" > "$root/etc/passwd"
  echo "nogroup:x:65534:" > "$root/etc/group"
  echo "root filesystem ($(du -sh "$root" | cut -f1)):"
  (cd "$root" && find . -path ./proc -prune -o -type f -print | sort | sed 's/^/  /')
  run() { env -i HOME=/tmp XDG_CACHE_HOME=/tmp/cache SWITCHYARD_DATA_DIR=/data "$CHROOT" --userspec=65534:65534 "$root" /switchyard "$@"; }
else
  mode="empty directory (not root: no chroot)"
  cp "$bin" "$root/switchyard"
  run() { (cd "$root" && env -i HOME="$root" XDG_CACHE_HOME="$root/cache" SWITCHYARD_DATA_DIR="$root/data" ./switchyard "$@"); }
fi
echo "mode: $mode"

echo "--- switchyard --version"
run --version
echo "--- switchyard doctor (ok fields)"
run doctor | grep -E '"(ok|compiled|target)"' | tr -s ' ' | tr '\n' ' '
echo
echo "--- switchyard serve on port $port"
# An upstream address (nothing listens there) so the catalog's chat models are listed.
if [ "$mode" = chroot ]; then
  env -i HOME=/tmp XDG_CACHE_HOME=/tmp/cache SWITCHYARD_DATA_DIR=/data PORT=$port HOST=127.0.0.1 SWITCHYARD_LOG_LEVEL=error SWITCHYARD_UPSTREAM_URL=http://127.0.0.1:9/v1 "$CHROOT" --userspec=65534:65534 "$root" /switchyard serve 2>"$root/tmp/serve.log" &
else
  (cd "$root" && exec env -i HOME="$root" XDG_CACHE_HOME="$root/cache" SWITCHYARD_DATA_DIR="$root/data" PORT=$port HOST=127.0.0.1 SWITCHYARD_LOG_LEVEL=error SWITCHYARD_UPSTREAM_URL=http://127.0.0.1:9/v1 ./switchyard serve 2>"$root/serve.log") &
fi
pid=$!
i=0
until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
  i=$((i + 1))
  if [ $i -gt 150 ] || ! kill -0 "$pid" 2>/dev/null; then echo "did not start:"; cat "$root"/tmp/serve.log "$root"/serve.log 2>/dev/null; exit 1; fi
  sleep 0.2
done
echo "start-up line: $(head -n 1 "$root"/tmp/serve.log "$root"/serve.log 2>/dev/null | grep listening)"
echo "GET /healthz -> $(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz") $(curl -sS "http://127.0.0.1:$port/healthz")"
models=$(curl -fsS "http://127.0.0.1:$port/v1/models")
echo "GET /v1/models -> $(printf '%s' "$models" | grep -o '"id":"[^"]*"' | wc -l) models, e.g. $(printf '%s' "$models" | grep -o '"id":"[^"]*"' | head -n 3 | tr '\n' ' ')"
printf '%s' "$models" | grep -q '"object":"list"'
kill -TERM "$pid"
wait "$pid" || true
pid=""
echo "smoke test passed ($mode)"
