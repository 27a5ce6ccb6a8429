"""scripts/import_graph.py: the package graph of live_swe and godel has no cycle, lazy imports count,
and the kernel never imports the Gödel engine."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "import_graph.py"


def _load():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"live_swe/__init__.py": "", "godel/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_project_graph_has_no_cycle_and_the_script_says_so():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert "live_swe.runner" in done.stdout and "no cycle" in done.stdout


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    graph = _load()
    root = _tree(tmp_path, {
        "live_swe/low/__init__.py": "",
        "live_swe/low/a.py": "def f():\n    from live_swe.high.b import g\n",
        "live_swe/high/__init__.py": "",
        "live_swe/high/b.py": "from live_swe.low.a import f\n",
    })
    top, lazy = graph.build(root)
    assert top["live_swe.high"] == {"live_swe.low"} and lazy["live_swe.low"] == {"live_swe.high"}
    assert graph.problems(top, lazy) == ["import cycle between packages: live_swe.high <-> live_swe.low"]


def test_the_kernel_importing_godel_is_refused_but_the_command_line_may(tmp_path):
    graph = _load()
    root = _tree(tmp_path, {
        "godel/engine.py": "from live_swe.runner import run\n",
        "live_swe/runner.py": "import godel.engine\n",
        "live_swe/cli/__init__.py": "",
        "live_swe/cli/main.py": "def main():\n    from godel import engine\n",
    })
    found = graph.problems(*graph.build(root))
    assert "live_swe.runner imports godel: the kernel must not depend on the Gödel engine" in found
    assert not any(line.startswith("live_swe.cli ") for line in found)


def test_a_module_named_in_from_package_import_is_an_edge_to_it(tmp_path):
    graph = _load()
    root = _tree(tmp_path, {
        "live_swe/events.py": "from live_swe.session import store\n",
        "live_swe/session/__init__.py": "",
        "live_swe/session/store.py": "from live_swe import events as ev\n",
    })
    top, _lazy = graph.build(root)
    assert top["live_swe.session"] == {"live_swe.events"} and top["live_swe.events"] == {"live_swe.session"}
    assert graph.problems(*graph.build(root)) == ["import cycle between packages: live_swe.events <-> live_swe.session"]
