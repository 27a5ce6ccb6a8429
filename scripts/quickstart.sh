#!/usr/bin/env bash
# The first command for a new user: create a virtual environment (./.venv in the checkout, or
# $LIVE_SWE_VENV), install live-swe there with the embedded local model runtime, pull the default
# local model (Qwen2.5-Coder-0.5B-Instruct, ~490 MB, hash-checked), and run the agent on the bundled
# demo repository. No API key needed, and nothing is installed into the system's Python.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
venv="${LIVE_SWE_VENV:-$root/.venv}"

if [ ! -x "$venv/bin/python" ]; then
  echo "==> creating a virtual environment in $venv"
  "$python" -m venv "$venv"
fi
echo "==> installing live-swe there with the local model runtime (llama-cpp-python; may compile for a few minutes)"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -e "$root[local]"

echo "==> pulling the default local model"
"$venv/bin/live-swe" models pull qwen2.5-coder-0.5b

echo "==> running the agent on the demo repository"
status=0
"$venv/bin/live-swe" demo || status=$?

cat <<EOF

live-swe is installed in $venv. To use it:
  source "$venv/bin/activate"
  live-swe                      # the terminal UI on the repository you are in
  live-swe run --task "..."     # headless (live-swe --help for the rest)
EOF
exit $status
