"""Speed and memory of the embedded local models on this machine.

For each model, in its own process (so peak memory is that model's alone):
- load time;
- prompt processing speed: the seed scaffold's rendered system + instance prompt for the demo
  task, evaluated from an empty cache (tokens/s);
- generation speed: greedy decoding after that prompt (tokens/s);
- time per agent step: the agent on the demo repository for a few steps (seconds per step, median);
- peak resident memory (RSS) of the process.

Each speed is the median of --repeat runs. Usage:

    python benchmarks/local_model.py [--models smollm2-135m qwen2.5-coder-0.5b] [--steps 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def seed_prompt_messages(task: str, repo_dir: str) -> list[dict]:
    """The first two messages the agent sends, rendered from the seed scaffold."""
    from live_swe.scaffolding.refs import materialize
    from live_swe.scaffolding.render import render
    from live_swe.scaffolding.scaffold import load_scaffold

    with tempfile.TemporaryDirectory() as folder:
        materialize("seed", Path(folder) / "scaffold")
        scaffold = load_scaffold(Path(folder) / "scaffold")
    context = {"repo_dir": repo_dir, "scaffold_dir": "/scaffold", "action_format": scaffold.policy.action_format,
               "command_timeout": 120, "tools": [], "step": 0}
    return [
        {"role": "system", "content": render(scaffold.template("system"), context)},
        {"role": "user", "content": render(scaffold.template("instance"), {**context, "task": task, "repo_map": ""})},
    ]


def measure_speed(model, messages: list[dict], gen_tokens: int) -> dict:
    """One prompt evaluation from an empty cache, then ``gen_tokens`` greedy tokens."""
    from live_swe.models import local

    with local._lock:
        loaded = local._load(model.path, model.n_ctx, model.n_threads, model.seed)
        prompt, _stops = model._prompt_tokens(loaded, messages)
        llm = loaded.llm
        llm.reset()
        started = time.perf_counter()
        llm.eval(prompt)
        prompt_s = time.perf_counter() - started
        generated = 0
        started = time.perf_counter()
        for token in llm.generate(prompt, temp=0.0, reset=True):  # the prompt is cached: decoding only
            if generated == gen_tokens:  # EOS is ignored: the speed is what is measured
                break
            generated += 1
            del token
        gen_s = time.perf_counter() - started
        loaded.last_prompt = []  # the cache no longer matches any conversation
        llm.reset()
    return {"prompt_tokens": len(prompt), "prompt_tok_s": len(prompt) / prompt_s,
            "gen_tokens": generated, "gen_tok_s": generated / gen_s}


def measure_steps(name: str, model, steps: int) -> dict:
    from live_swe.cli.demo_cmd import demo_task, make_demo_repo
    from live_swe.config import KernelLimits
    from live_swe.runner import RunHooks, RunRequest, start_run

    times: list[float] = []
    last = [time.perf_counter()]

    def on_event(event: dict) -> None:
        if event.get("t") in ("step", "format_error"):
            now = time.perf_counter()
            times.append(now - last[0])
            last[0] = now

    with tempfile.TemporaryDirectory() as parent:
        repo = make_demo_repo(Path(parent) / "shop")
        request = RunRequest(task=demo_task(), model=name, repo=repo, limits=KernelLimits(step_limit=steps))
        last[0] = time.perf_counter()
        result = start_run(request, RunHooks(observers=[on_event], model_factory=lambda _n: model))
    return {"agent_steps": len(times), "step_s_median": statistics.median(times) if times else None,
            "step_s_all": [round(t, 2) for t in times], "run_status": result.status}


def bench_one(name: str, repeat: int, gen_tokens: int, steps: int) -> dict:
    """Runs inside the child process for one model."""
    from live_swe.models import local
    from live_swe.models.resolve import make_model

    model = make_model(name)
    started = time.perf_counter()
    local._load(model.path, model.n_ctx, model.n_threads, model.seed)
    load_s = time.perf_counter() - started
    from live_swe.cli.demo_cmd import demo_task

    messages = seed_prompt_messages(demo_task(), "/tmp/shop")
    runs = [measure_speed(model, messages, gen_tokens) for _ in range(repeat)]
    result = {
        "model": name, "n_ctx": model.n_ctx, "n_threads": model.n_threads, "load_s": round(load_s, 2),
        "prompt_tokens": runs[0]["prompt_tokens"],
        "prompt_tok_s_median": round(statistics.median(r["prompt_tok_s"] for r in runs), 1),
        "prompt_tok_s_all": [round(r["prompt_tok_s"], 1) for r in runs],
        "gen_tok_s_median": round(statistics.median(r["gen_tok_s"] for r in runs), 1),
        "gen_tok_s_all": [round(r["gen_tok_s"], 1) for r in runs],
        "gen_tokens": runs[0]["gen_tokens"],
    }
    result.update(measure_steps(name, model, steps))
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["local/smollm2-135m", "local/qwen2.5-coder-0.5b"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gen-tokens", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5, help="agent steps on the demo task")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child process: benchmark this model only
    args = parser.parse_args()
    if args.one:
        print(json.dumps(bench_one(args.one, args.repeat, args.gen_tokens, args.steps)))
        return
    results = []
    for name in args.models:
        name = name if name.startswith("local/") else f"local/{name}"
        child = subprocess.run(
            [sys.executable, __file__, "--one", name, "--repeat", str(args.repeat),
             "--gen-tokens", str(args.gen_tokens), "--steps", str(args.steps)],
            capture_output=True, text=True,
        )
        if child.returncode != 0:
            sys.exit(f"{name}: benchmark failed:\n{child.stderr[-2000:]}")
        results.append(json.loads(child.stdout.strip().splitlines()[-1]))
    header = f"{'model':<28}{'threads':>8}{'load s':>8}{'prompt tok':>11}{'prompt tok/s':>13}{'gen tok/s':>10}" \
             f"{'s/step':>8}{'peak RSS MB':>12}"
    print(header)
    for r in results:
        step = f"{r['step_s_median']:.1f}" if r["step_s_median"] is not None else "-"
        print(f"{r['model']:<28}{r['n_threads']:>8}{r['load_s']:>8}{r['prompt_tokens']:>11}"
              f"{r['prompt_tok_s_median']:>13}{r['gen_tok_s_median']:>10}{step:>8}{r['peak_rss_mb']:>12}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
