#!/usr/bin/env bash
# aider against Switchyard, non-interactive, as docs/protocols.md writes it. The engine stack's "model"
# echoes the user text, so the message carries a whole-file listing for aider to apply: the check
# is that aider's request, streamed reply, usage line and edit all go through.
set -euo pipefail
AIDER=${1:?path to the aider executable}
base=$(python3 -c 'import json,os;print(json.loads(os.environ["SWITCHYARD_STACK"])["base"])')
key=$(python3 -c 'import json,os;print(json.loads(os.environ["SWITCHYARD_STACK"])["key"])')
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"; echo 'print("hi")' > hello.py
out=$(HOME="$dir" "$AIDER" --openai-api-base "$base/v1" --openai-api-key "$key" --model openai/glm-4.6 \
  --no-show-model-warnings --yes-always --no-git --no-check-update --no-analytics --no-show-release-notes \
  --message $'Create:\n\ncasual.py\n```\nprint("hey there")\n```\n' hello.py 2>&1 </dev/null)
grep -q '^Tokens: [0-9]* sent, [0-9]* received' <<<"$out" || { echo "aider FAIL: no usage line"; echo "$out" | tail -20; exit 1; }
[ "$(cat casual.py)" = 'print("hey there")' ] || { echo "aider FAIL: edit not applied"; echo "$out" | tail -20; exit 1; }
echo "aider $("$AIDER" --version | awk '{print $2}') PASS: streamed chat, usage, whole-file edit applied"
