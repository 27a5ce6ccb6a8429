"""Input tokens billed per instance under Anthropic prompt caching: live-swe next to mini-swe-agent 2.4.6.

One long trajectory (over 100 commands on a repository of real code, eight modules of this
Python's standard library: looking around, three tools written into the scaffold and used, one
scaffold edit, a fix, tests, a submission) is replayed through each
agent's real loop, in its local environment, with a model that records every request exactly as the
agent would send it to an Anthropic model: live-swe's through ``LitellmModel.prepare`` (its cache
breakpoints), mini-swe-agent's through its ``LitellmTextbasedModel`` with ``set_cache_control:
default_end`` (what it picks for Anthropic models) and its SWE-bench config. Tokens are counted
with litellm's token counter for the model, and each request is priced under Anthropic's cache
rules: a prefix ending at a breakpoint of an earlier request (looked up at most 20 blocks back from
each breakpoint) is read at 0.1x the input price, what follows up to the last breakpoint is written
at 1.25x (only prefixes of at least the model's minimum cacheable length are cached), the rest is
plain input at 1x. Both replies are the same text (in each agent's action format), so output tokens
are equal and left out.

    python benchmarks/token_cost.py [--model anthropic/claude-sonnet-4-5-20250929] [--mini-venv /tmp/venv-mini-bench]

Prints, per agent: requests, input tokens, cache read / write / uncached tokens, billed input in
token-equivalents and USD, the share read from cache, and live-swe's billed input as a multiple of
mini-swe-agent's. mini-swe-agent 2.4.6 is installed into a throwaway venv on first use.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loop_overhead import MINI_VERSION, ensure_mini  # noqa: E402 - a sibling benchmark script

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO_ROOT = Path(__file__).resolve().parent.parent
MODEL = "anthropic/claude-sonnet-4-5-20250929"
CACHE_WRITE, CACHE_READ, LOOKBACK_BLOCKS = 1.25, 0.1, 20
# The repository: real code of realistic size, the same in both runs: modules of this Python's stdlib.
MODULES = ("textwrap", "shlex", "csv", "calendar", "configparser", "fractions", "difflib", "argparse")
TESTS = {
    "test_textwrap.py": (
        "import textwrap\n\n\ndef test_shorten_keeps_words():\n"
        "    assert textwrap.shorten('Hello  world!', width=12) == 'Hello world!'\n\n\n"
        "def test_shorten_placeholder():\n"
        "    assert textwrap.shorten('Hello world and more', width=15) == 'Hello [...]'\n\n\n"
        "def test_wrap_width():\n    assert textwrap.wrap('a b c d', width=3) == ['a b', 'c d']\n"),
    "test_shlex.py": (
        "import shlex\n\n\ndef test_split_quotes():\n    assert shlex.split('a \"b c\" d') == ['a', 'b c', 'd']\n\n\n"
        "def test_join_round_trip():\n    assert shlex.split(shlex.join(['x y', 'z'])) == ['x y', 'z']\n"),
    "test_fractions.py": (
        "from fractions import Fraction\n\n\ndef test_limit_denominator():\n"
        "    assert Fraction('3.1415926535897932').limit_denominator(1000) == Fraction(355, 113)\n"),
}
TASK = """textwrap.shorten() gives up too early on long words

`textwrap.shorten(text, width, placeholder=...)` returns only the placeholder when the first word of
`text` is longer than `width` minus the placeholder, even when the whole text would fit once runs of
whitespace are collapsed. Find where shorten() decides what fits, make it collapse whitespace before
measuring, and keep every other test in `tests/` passing (shlex, fractions and the rest must not change).
"""


# -- the trajectory ---------------------------------------------------------------------------------

FIND_DEF = '''#!/usr/bin/env python3
# live-swe-tool: find-def
# description: where a Python function or class is defined, as FILE:LINE: the definition line
# usage: find-def NAME [PATH]
import os
import re
import sys

if len(sys.argv) < 2 or sys.argv[1] == "--help":
    print("usage: find-def NAME [PATH]  (where NAME is defined: FILE:LINE: line)")
    sys.exit(0)
name, root = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "."
pattern = re.compile(rf"^\\s*(def|class)\\s+{re.escape(name)}\\b")
found = 0
for folder, dirs, files in os.walk(root):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for file in sorted(files):
        if file.endswith(".py"):
            path = os.path.join(folder, file)
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if pattern.match(line):
                    print(f"{path}:{number}: {line.rstrip()}")
                    found += 1
sys.exit(0 if found else 1)
'''

SHOW = '''#!/bin/bash
# live-swe-tool: show
# description: lines START..END of a file, numbered
# usage: show FILE [START] [END]
if [ "$1" = "--help" ] || [ -z "$1" ]; then echo "usage: show FILE [START] [END]"; exit 0; fi
start="${2:-1}"; end="${3:-$((start + 39))}"
awk -v s="$start" -v e="$end" 'NR >= s && NR <= e { printf "%5d  %s\\n", NR, $0 }' "$1"
'''

RUN_TESTS = '''#!/bin/bash
# live-swe-tool: run-tests
# description: run tests quietly: the summary line and any failure
# usage: run-tests PATH [PYTEST-ARGS...]
if [ "$1" = "--help" ] || [ -z "$1" ]; then echo "usage: run-tests PATH [PYTEST-ARGS...]"; exit 0; fi
target="$1"; shift
python3 -m pytest -q -p no:cacheprovider "$target" "$@" 2>&1 | tail -n 25
'''


def write_tool(name: str, source: str) -> str:
    return (f"mkdir -p \"$LIVE_SWE_SCAFFOLD/tools\" && cat > \"$LIVE_SWE_SCAFFOLD/tools/{name}\" <<'EOF'\n"
            f"{source}EOF\nchmod +x \"$LIVE_SWE_SCAFFOLD/tools/{name}\" && echo written")


def trajectory(repo: Path) -> list[tuple[str, str]]:
    """(thought, command) pairs: what a careful agent does on TASK in this repository; its three tools
    are written at steps 6, 21 and 37 and its scaffold edited at step 57."""
    modules = [f"{name}.py" for name in MODULES]
    lengths = {name: len((repo / name).read_text().splitlines()) for name in modules}
    reading: list[tuple[str, str]] = [
        ("How big is each module?", "wc -l *.py tests/*.py"),
        ("Where does shorten live?", "grep -n 'def shorten\\|class TextWrapper\\|def wrap\\|def fill' textwrap.py"),
        ("What does textwrap define?", "grep -n '^def \\|^class \\|^    def ' textwrap.py"),
        ("The tests.", "cat -n tests/test_textwrap.py"),
    ]
    for name in modules:  # read each module in windows of 80 lines, as far as 400 lines in
        for start in range(1, min(lengths[name], 400), 80):
            reading.append((f"Read {name} from line {start}.", f"sed -n '{start},{start + 79}p' {name}"))
    for name in modules:
        reading.append((f"The public names of {name}.", f"grep -n '^def \\|^class ' {name} | head -40"))
    for word in ("shorten", "placeholder", "_munge_whitespace", "_split_chunks", "break_long_words", "max_lines"):
        reading.append((f"Where is {word} used?", f"grep -rn '{word}' --include=*.py . | head -25"))
    steps = [reading[0], reading[1], reading[2], ("The README, if any.", "ls -la && git log --oneline | head -3"),
             reading[3]]
    steps.append(("A tool to find definitions fast will pay off in modules this long.", write_tool("find-def", FIND_DEF)))
    steps.append(("Try it.", "find-def shorten"))
    steps += reading[4:17]
    steps.append(("A numbered view of files will make edits safer.", write_tool("show", SHOW)))
    steps.append(("Try it on shorten.", "show textwrap.py $(grep -n 'def shorten' textwrap.py | cut -d: -f1) 40"))
    steps += reading[17:31]
    steps.append(("Running the tests quietly is something I will do often.", write_tool("run-tests", RUN_TESTS)))
    steps.append(("Try it.", "run-tests tests"))
    steps += reading[31:50]
    steps.append(("Observations of whole files are long; show less of them from now on.",
                  "sed -i 's/^  max_chars: 10000$/  max_chars: 9000/' \"$LIVE_SWE_SCAFFOLD/scaffold.yaml\" "
                  "&& grep -n max_chars \"$LIVE_SWE_SCAFFOLD/scaffold.yaml\""))
    steps += reading[50:]
    for name in ("shorten", "TextWrapper", "_split", "_wrap_chunks", "_handle_long_word"):
        steps.append((f"Where is {name} defined?", f"find-def {name} . || true"))
        steps.append(("Its code.", f"show textwrap.py $(grep -n 'def {name}\\|class {name}' textwrap.py | head -1 | "
                                   f"cut -d: -f1) 45"))
    while len(steps) < 105 - 8:  # a long run: more reading before the fix
        name = modules[len(steps) % len(modules)]
        steps.append((f"Re-read the end of {name}.", f"tail -n 40 {name}"))
    steps += [
        ("Reproduce the problem.", "python3 -c \"import textwrap; print(repr(textwrap.shorten('Supercalifragilistic  is"
                                   " long', width=24)))\""),
        ("All tests before the change.", "run-tests tests -v"),
        ("Check the git state.", "git status --short && git diff --stat"),
        ("Collapse whitespace before measuring in shorten.",
         "sed -i \"s/w.fill(' '.join(text.strip().split()))/w.fill(' '.join(text.split()))/\" textwrap.py "
         "&& git diff --stat"),
        ("Run every test again.", "run-tests tests -v"),
        ("Review the diff.", "git diff"),
        ("One more look at shorten.", "show textwrap.py $(grep -n 'def shorten' textwrap.py | cut -d: -f1) 30"),
        ("Submit.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    return steps


def make_repository(root: Path) -> Path:
    import sysconfig

    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in MODULES:
        shutil.copy(stdlib / f"{name}.py", repo / f"{name}.py")
    for name, text in TESTS.items():
        (repo / "tests" / name).write_text(text)
    (repo / "tests" / "conftest.py").write_text("import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent))\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "modules"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return repo


# -- the cache ---------------------------------------------------------------------------------------


def _plain(message: dict) -> dict:
    """A message without cache markers (they are not part of the cached content)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return {"role": message["role"], "content": content or ""}


def _has_breakpoint(message: dict) -> bool:
    content = message.get("content")
    if message.get("cache_control"):
        return True
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("cache_control") for p in content)


@dataclass
class Bill:
    requests: int = 0
    read: int = 0
    written: int = 0
    uncached: int = 0
    _cache: set[str] = field(default_factory=set)
    _tokens: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.read + self.written + self.uncached

    @property
    def billed(self) -> float:
        """Billed input in base-price token equivalents."""
        return self.uncached + CACHE_WRITE * self.written + CACHE_READ * self.read

    def tokens(self, model: str, message: dict) -> int:
        import litellm

        key = hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()
        if key not in self._tokens:
            self._tokens[key] = litellm.token_counter(model=model, messages=[message])
        return self._tokens[key]

    def add(self, model: str, payload: list[dict], min_cacheable: int) -> None:
        self.requests += 1
        plain = [_plain(m) for m in payload]
        counts = [self.tokens(model, m) for m in plain]
        prefix_tokens, prefix_keys, running, digest = [], [], 0, hashlib.sha256()
        for message, count in zip(plain, counts, strict=True):
            running += count
            digest.update(json.dumps(message, sort_keys=True).encode())
            prefix_tokens.append(running)
            prefix_keys.append(digest.hexdigest())
        breakpoints = [i for i, m in enumerate(payload) if _has_breakpoint(m)]
        if not breakpoints:
            self.uncached += running
            return
        hit = -1
        for point in breakpoints:
            for index in range(point, max(-1, point - LOOKBACK_BLOCKS), -1):
                if prefix_keys[index] in self._cache:
                    hit = max(hit, index)
                    break
        read = prefix_tokens[hit] if hit >= 0 else 0
        last = breakpoints[-1]
        to_last = prefix_tokens[last]
        if to_last >= min_cacheable:
            self.read += read
            self.written += to_last - read
        else:
            self.read += read
            self.uncached += to_last - read
        self.uncached += running - to_last
        for point in breakpoints:
            if prefix_tokens[point] >= min_cacheable:
                self._cache.add(prefix_keys[point])


# -- the two agents ------------------------------------------------------------------------------------


class RecordingModel:
    """Answers with the trajectory's replies and records each request as live-swe would send it."""

    def __init__(self, name: str, replies: list[str], requests: list[list[dict]]):
        from live_swe.models.litellm_model import LitellmModel

        self.name = name
        self._replies = list(replies)
        self._requests = requests
        provider = LitellmModel(name)
        self._prepare = getattr(provider, "prepare", None) or self._without_prepare

    @staticmethod
    def _without_prepare(messages):  # a checkout whose LitellmModel has no prepare() yet
        from live_swe.models.litellm_model import _cache_control

        return _cache_control(messages)

    def query(self, messages, *, tools=None, on_token=None):
        from live_swe.models.base import Reply

        self._requests.append(json.loads(json.dumps(self._prepare(messages))))
        return Reply(self._replies.pop(0))


def run_live_swe(repo: Path, steps: list[tuple[str, str]], model: str) -> list[list[dict]]:
    from live_swe.config import KernelLimits
    from live_swe.runner import RunHooks, RunRequest, start_run
    from live_swe.session.store import SessionStore

    replies = [f"THOUGHT: {thought}\n\n```bash\n{command}\n```" for thought, command in steps]
    requests: list[list[dict]] = []
    with tempfile.TemporaryDirectory(prefix="live-swe-token-cost-") as home:
        os.environ["LIVE_SWE_HOME"] = home
        request = RunRequest(task=TASK, model=model, repo=repo,
                             limits=KernelLimits(step_limit=len(steps) + 5, cost_limit=0, wall_time_limit=3600))
        hooks = RunHooks(model_factory=lambda name: RecordingModel(name, replies, requests))
        result = start_run(request, hooks, store=SessionStore(Path(home) / "sessions"))
        events = [json.loads(line) for line in (Path(home) / "sessions" / result.session_id / "events.jsonl")
                  .read_text().splitlines()]
    if result.status != "submitted":
        raise SystemExit(f"live-swe did not finish the trajectory: {result.status} {result.message}")
    tools = [e["name"] for e in events if e.get("t") == "tool" and e.get("kind") == "registered"]
    edits = [e for e in events if e.get("t") == "scaffold" and e.get("kind") == "commit"
             and "scaffold.yaml" in e.get("files", [])]
    if len(tools) != 3 or len(edits) != 1:
        raise SystemExit(f"the trajectory should register 3 tools and commit 1 scaffold edit: {tools}, {len(edits)}")
    return requests


MINI_SNIPPET = r"""
import json, os, sys
from pathlib import Path
import litellm, yaml, minisweagent
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

repo, scaffold, model_name, replies_file, task, out = sys.argv[1:7]
replies = json.loads(Path(replies_file).read_text())
config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "benchmarks" / "swebench_backticks.yaml").read_text())
requests = []

class Recording(LitellmTextbasedModel):
    def _query(self, messages, **kwargs):
        requests.append(json.loads(json.dumps(messages)))
        text = replies.pop(0)
        return litellm.ModelResponse(choices=[{"message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}])

model_config = {k: v for k, v in config["model"].items() if k not in ("model_name", "model_kwargs")}
model = Recording(model_name=model_name, set_cache_control="default_end", cost_tracking="ignore_errors", **model_config)
env_config = {k: v for k, v in config["environment"].items() if k in ("env", "timeout")}
env_config["env"] = {**env_config.get("env", {}), "LIVE_SWE_SCAFFOLD": scaffold,
                     "PATH": scaffold + "/tools:" + os.environ["PATH"]}
agent = DefaultAgent(model, LocalEnvironment(cwd=repo, **env_config), **config["agent"])
info = agent.run(task)
Path(out).write_text(json.dumps(requests))
print(json.dumps({"exit_status": info.get("exit_status"), "requests": len(requests)}))
"""


def run_mini(python: Path, repo: Path, steps: list[tuple[str, str]], model: str) -> list[list[dict]]:
    from live_swe.resources import resource_path

    with tempfile.TemporaryDirectory(prefix="mini-token-cost-") as tmp:
        scaffold = Path(tmp) / "scaffold"  # the same files to edit, so the commands print the same
        shutil.copytree(resource_path("scaffold"), scaffold)
        (scaffold / "tools").mkdir(exist_ok=True)
        replies = Path(tmp) / "replies.json"
        replies.write_text(json.dumps([f"THOUGHT: {t}\n\n```mswea_bash_command\n{c}\n```" for t, c in steps]))
        out = Path(tmp) / "requests.json"
        env = {**os.environ, "MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run([str(python), "-c", MINI_SNIPPET, str(repo), str(scaffold), model, str(replies), TASK,
                               str(out)], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"mini-swe-agent failed:\n{done.stderr[-3000:]}")
        status = json.loads(done.stdout.strip().splitlines()[-1])
        if status["exit_status"] != "Submitted":
            raise SystemExit(f"mini-swe-agent did not finish the trajectory: {status}")
        return json.loads(out.read_text())


def price(requests: list[list[dict]], model: str) -> Bill:
    import litellm

    min_cacheable = int(litellm.model_cost.get(model, litellm.model_cost.get(model.split("/", 1)[-1], {}))
                        .get("prompt_cache_min_tokens") or 1024)
    bill = Bill()
    for payload in requests:
        bill.add(model, payload, min_cacheable)
    return bill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--mini-venv", type=Path, default=Path("/tmp/venv-mini-bench"))
    args = parser.parse_args()
    import litellm

    mini = ensure_mini(args.mini_venv)
    input_price = float((litellm.model_cost.get(args.model) or litellm.model_cost[args.model.split("/", 1)[-1]])
                        ["input_cost_per_token"])
    with tempfile.TemporaryDirectory() as tmp:
        ours_repo, mini_repo = make_repository(Path(tmp) / "a"), make_repository(Path(tmp) / "b")
        steps = trajectory(ours_repo)
        bills = {"live-swe": price(run_live_swe(ours_repo, steps, args.model), args.model),
                 f"mini-swe-agent {MINI_VERSION}": price(run_mini(mini, mini_repo, steps, args.model), args.model)}
    print(f"one trajectory of {len(steps)} commands (3 tools, 1 scaffold edit), {args.model}, "
          f"cache write {CACHE_WRITE}x, read {CACHE_READ}x")
    print(f"{'agent':<22} {'requests':>8} {'input tok':>10} {'read':>10} {'written':>9} {'uncached':>9} "
          f"{'billed tok-eq':>13} {'input USD':>9} {'read share':>10}")
    for name, bill in bills.items():
        print(f"{name:<22} {bill.requests:>8} {bill.total:>10} {bill.read:>10} {bill.written:>9} {bill.uncached:>9} "
              f"{bill.billed:>13.0f} {bill.billed * input_price:>9.4f} {bill.read / bill.total:>10.1%}")
    ours, anchor = bills.values()
    print(f"live-swe billed input = {ours.billed / anchor.billed:.3f}x mini-swe-agent's on the same trajectory")


if __name__ == "__main__":
    main()
