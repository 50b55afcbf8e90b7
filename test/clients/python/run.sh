#!/usr/bin/env bash
# The Python client recipes of docs/protocols.md ("Clients tested"), run by hand against a live
# Switchyard over the deterministic engine stack (test/support/engine-stack.ts). Not part of
# `npm test`: CI installs only npm packages. Give each client's venv (any may be left out):
#   SDK_PY=/tmp/cvenv/bin/python      pip install openai anthropic langchain-openai
#   LITELLM_PY=/tmp/lvenv/bin/python  pip install 'litellm[proxy]'
#   AIDER=/tmp/avenv/bin/aider        pip install aider-chat   (own venv: it pins old litellm/openai)
#   test/clients/python/run.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
log=$(mktemp)
(cd "$root" && exec node_modules/.bin/bun test/support/engine-stack.ts) > "$log" 2>&1 &
stack=$!
trap 'kill "$stack" 2>/dev/null; wait "$stack" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 100); do grep -q '"base"' "$log" && break; sleep 0.2; done
export SWITCHYARD_STACK=$(grep '"base"' "$log" | head -1)
[ -n "$SWITCHYARD_STACK" ] || { cat "$log"; exit 1; }
fail=0
run() { "$@" || { echo "FAIL: $*"; fail=1; }; }
if [ -n "${SDK_PY:-}" ]; then
  run "$SDK_PY" "$here/check_openai.py"
  run "$SDK_PY" "$here/check_anthropic.py"
  run "$SDK_PY" "$here/check_langchain.py"
fi
if [ -n "${LITELLM_PY:-}" ]; then
  run "$LITELLM_PY" "$here/check_litellm.py"
  run "$LITELLM_PY" "$here/check_litellm_proxy.py"
fi
[ -n "${AIDER:-}" ] && run "$here/check_aider.sh" "$AIDER"
exit $fail
