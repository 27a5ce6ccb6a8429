#!/usr/bin/env bash
# The first command for a new user: install live-swe with the embedded local model runtime, pull the
# default local model (Qwen2.5-Coder-0.5B-Instruct, ~490 MB, hash-checked), and run the agent on the
# bundled demo repository. No API key needed. Run from anywhere inside the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"

echo "==> installing live-swe with the local model runtime (llama-cpp-python; may compile for a few minutes)"
"$python" -m pip install -e "$root[local]"

echo "==> pulling the default local model"
"$python" -m live_swe.cli.main models pull qwen2.5-coder-0.5b

echo "==> running the agent on the demo repository"
"$python" -m live_swe.cli.main demo
