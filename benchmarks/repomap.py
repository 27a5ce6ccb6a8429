"""Repository map on a large Python repository: cold build, warm (cached) build, peak memory.

The repository is an unpacked sdist from PyPI (Django 5.1.4 by default: about 2,800 Python
files), made a git repository so files are listed the way they are in real use. Each
measurement runs in a fresh process so memory and import costs are honest:

- cold: empty cache; every file is parsed (worker processes when there are many files);
- warm: same cache, nothing changed: every file is stat'ed, the saved reference graph is loaded,
  ranked for the task and the map rendered (tags are read only for the files shown);
- one file edited: that file is parsed again and the graph rebuilt from the cached tags;
- anchor (same run): parsing every file with tree-sitter in one process and nothing else, i.e.
  what a map without a cache would pay on every call.

Peak memory is the largest resident set of the measuring process, and of any one worker.

    python benchmarks/repomap.py [--repo PATH] [--cold-runs 3] [--warm-runs 5] [--json OUT]

Targets (issue 6): warm <= 0.5 s, cold <= 20 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SDIST = "django==5.1.4"
TASK = "QuerySet.filter() with a Q object on a related field raises FieldError in django/db/models/query.py"

MEASURE = r"""
import json, resource, sys, time
from pathlib import Path
from live_swe.repomap import RepoMapper
repo, cache, task = sys.argv[1], sys.argv[2], sys.argv[3]
started = time.perf_counter()
result = RepoMapper(Path(repo), cache_dir=Path(cache)).build(task, 1024)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "files": result.files, "parsed": result.parsed, "shown": result.shown,
                  "tokens": result.tokens,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

ANCHOR = r"""
import json, sys, time
from live_swe.repomap.files import source_files
from live_swe.repomap.languages import parser_and_query
from pathlib import Path
repo = Path(sys.argv[1])
files = source_files(repo)
started = time.perf_counter()
for rel, language in files:
    parser_and_query(language)[0].parse((repo / rel).read_bytes())
print(json.dumps({"seconds": time.perf_counter() - started, "files": len(files)}))
"""


def fetch_repo(root: Path) -> Path:
    """Download and unpack the sdist once; make it a git repository."""
    found = [p for p in root.glob("*/") if (p / "setup.py").exists() or (p / "pyproject.toml").exists()]
    if not found:
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST,
                        "-d", str(root)], check=True, capture_output=True)
        [archive] = root.glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")  # owned by us, so git trusts the directory
        found = [p for p in root.glob("*/") if p.is_dir()]
    repo = found[0]
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def run(script: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, help="a repository to map (default: the Django sdist)")
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--warm-runs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    repo = args.repo or fetch_repo(Path(tempfile.gettempdir()) / "live-swe-bench-repomap")
    python_files = sum(1 for _ in repo.rglob("*.py"))
    print(f"repository: {repo} ({python_files} Python files), {os.cpu_count()} CPUs", file=sys.stderr)

    colds, warms = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(args.cold_runs):
            cache = Path(scratch) / f"cold-{i}"
            colds.append(run(MEASURE, str(repo), str(cache), TASK))
            print(f"cold {i + 1}: {colds[-1]['seconds']:.2f} s", file=sys.stderr)
        for i in range(args.warm_runs):
            warms.append(run(MEASURE, str(repo), str(Path(scratch) / "cold-0"), TASK))
            print(f"warm {i + 1}: {warms[-1]['seconds']:.3f} s", file=sys.stderr)
        edited = repo / "django" / "db" / "models" / "query.py"
        edits = []
        if edited.exists():
            original = edited.read_bytes()
            try:
                for i in range(args.warm_runs):
                    edited.write_bytes(original + f"\n# edit {i}\n".encode())
                    edits.append(run(MEASURE, str(repo), str(Path(scratch) / "cold-0"), TASK))
                    print(f"one file edited {i + 1}: {edits[-1]['seconds']:.3f} s", file=sys.stderr)
            finally:
                edited.write_bytes(original)
    anchor = run(ANCHOR, str(repo))
    assert all(w["parsed"] == 0 for w in warms), "a warm build parsed files: the cache did not hold"
    figures = {
        "repository": str(repo),
        "python_files": python_files,
        "mapped_files": colds[0]["files"],
        "cpus": os.cpu_count(),
        "cold_s_median": statistics.median(c["seconds"] for c in colds),
        "cold_s_runs": [round(c["seconds"], 3) for c in colds],
        "warm_s_median": statistics.median(w["seconds"] for w in warms),
        "warm_s_runs": [round(w["seconds"], 3) for w in warms],
        "one_file_edited_s_median": statistics.median(e["seconds"] for e in edits) if edits else None,
        "anchor_parse_all_s": anchor["seconds"],
        "peak_rss_mb_cold": max(c["rss_mb"] for c in colds),
        "peak_worker_rss_mb_cold": max(c["worker_rss_mb"] for c in colds),
        "peak_rss_mb_warm": max(w["rss_mb"] for w in warms),
        "map_tokens": warms[0]["tokens"],
        "map_definitions": warms[0]["shown"],
        "targets": {"warm_s": 0.5, "cold_s": 20},
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
