"""validate's verdict and record, scaffold promote's refusal and success, archive show and plot."""

from __future__ import annotations

import json

import pytest
import yaml
from test_godel_evolve import IDS, MARKER, LocalTaskEvaluator, is_easy
from typer.testing import CliRunner

from godel.archive import Archive
from godel.validate import format_report, validate
from live_swe.cli.main import app
from live_swe.config import load_settings
from live_swe.scaffolding.refs import materialize

runner = CliRunner()


def _marked_scaffold(tmp_path):
    folder = tmp_path / "marked"
    materialize("seed", folder, library=None)
    system = folder / "prompts" / "system.j2"
    system.write_text(system.read_text() + f"\n{MARKER}: fix the constant you are told about.\n")
    return folder


def test_validate_then_promote(tmp_path, live_swe_home):
    marked = _marked_scaffold(tmp_path)
    ref = f"path:{marked}"
    # Not validated yet: promote refuses, with what to do.
    refused = runner.invoke(app, ["scaffold", "promote", ref])
    assert refused.exit_code == 2 and "no recorded 'better' validation" in refused.stderr

    # 4 instances: the seed solves the 2 EASY ones, the marked scaffold all 4 -> 2 wins, p = 0.5.
    small = validate(ref, "seed", suite="tasks", model="solver", instance_ids=IDS[:4],
                     evaluate=LocalTaskEvaluator(), resamples=2000)
    assert (small.comparison.wins, small.comparison.losses) == (2, 0)
    assert small.comparison.p_value == pytest.approx(0.5) and small.comparison.verdict == "no evidence"
    assert runner.invoke(app, ["scaffold", "promote", ref]).exit_code == 2

    # 12 instances -> 6 wins, none lost: p = 2/64, the bootstrap interval is above zero -> better.
    ids = [f"task-{n:02d}" for n in range(1, 13)]
    big = validate(ref, "seed", suite="tasks", model="solver", instance_ids=ids, evaluate=LocalTaskEvaluator(),
                   resamples=2000)
    c = big.comparison
    assert (c.candidate_resolved, c.baseline_resolved, c.wins, c.losses) == (12, 6, 6, 0)
    assert [p.baseline for p in big.pairs] == [is_easy(i) for i in sorted(ids)]
    assert c.p_value == pytest.approx(2 / 64) and c.ci_low > 0 and c.verdict == "better"
    assert "verdict: better" in format_report(big) and "+50.0 points" in format_report(big)
    record = Archive.default().validations()[-1]
    assert record["verdict"] == "better" and record["scaffold"] == ref and len(record["instances"]) == 12

    promoted = runner.invoke(app, ["scaffold", "promote", ref])
    assert promoted.exit_code == 0, promoted.output
    node_ref = promoted.stdout.strip()
    assert node_ref.startswith("archive:n")
    config = yaml.safe_load((live_swe_home / "config.yaml").read_text())
    assert config["scaffold"] == node_ref == load_settings().scaffold
    # The promoted content is the validated content, frozen in the archive.
    frozen = tmp_path / "frozen"
    materialize(node_ref, frozen, library=None)
    assert MARKER in (frozen / "prompts" / "system.j2").read_text()

    # Editing the folder after its validation voids it; --force still promotes.
    (marked / "hooks.py").write_text((marked / "hooks.py").read_text() + "\n# later edit\n")
    assert runner.invoke(app, ["scaffold", "promote", ref]).exit_code == 2
    forced = runner.invoke(app, ["scaffold", "promote", ref, "--force"])
    assert forced.exit_code == 0 and "forced" in forced.stderr
    assert runner.invoke(app, ["scaffold", "promote", "seed"]).exit_code == 0
    assert load_settings().scaffold == "seed"


def _small_archive(tmp_path) -> Archive:
    archive = Archive.default()
    seed = tmp_path / "seed"
    materialize("seed", seed, library=None)
    root = archive.add_node(seed, origin="seed", results={"a": True, "b": False, "c": False}, summary="root: seed")
    child = _marked_scaffold(tmp_path)
    good = archive.add_node(child, parent=root.id, results={"a": True, "b": True, "c": True},
                            summary="changed prompts/system.j2")
    archive.add_node(child, parent=root.id, results={"a": False, "b": False, "c": False}, summary="regressed")
    archive.add_node(child, parent=good.id, results={"a": True, "b": True, "c": False}, summary="grandchild")
    return archive


def test_archive_show_prints_the_tree_with_scores(tmp_path):
    _small_archive(tmp_path)
    shown = runner.invoke(app, ["archive", "show"])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("n0  0.33 (1/3)")
    assert lines[1].startswith("├── n1  1.00 (3/3)  changed prompts/system.j2")
    assert lines[2].startswith("│   └── n3  0.67 (2/3)")
    assert lines[3].startswith("└── n2  0.00 (0/3)")
    one = runner.invoke(app, ["archive", "show", "--node", "n1"])
    assert MARKER in one.stdout and "parent n0" in one.stdout
    as_json = json.loads(runner.invoke(app, ["archive", "show", "--json"]).stdout)
    assert [n["score"] for n in as_json] == pytest.approx([1 / 3, 1.0, 0.0, 2 / 3])


def test_archive_plot_writes_svg_and_png(tmp_path):
    _small_archive(tmp_path)
    out = tmp_path / "lineage.svg"
    result = runner.invoke(app, ["archive", "plot", "--out", str(out)])
    assert result.exit_code == 0, result.output
    svg = out.read_text()
    assert svg.startswith("<svg") and svg.count("<circle") == 4 and svg.count("<line") == 3
    assert ">n3<" in svg and ">0.67<" in svg
    pytest.importorskip("matplotlib")
    png = tmp_path / "lineage.png"
    assert runner.invoke(app, ["archive", "plot", "--out", str(png)]).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000


def test_archive_plot_refuses_an_unknown_format_and_an_empty_archive(tmp_path):
    bad = runner.invoke(app, ["archive", "plot", "--out", str(tmp_path / "x.gif")])
    assert bad.exit_code == 2 and ".svg or .png" in bad.stderr
    empty = runner.invoke(app, ["archive", "plot", "--out", str(tmp_path / "x.svg")])
    assert empty.exit_code == 2 and "empty" in empty.stderr


# A model that passes the model check (an embedded one is not loaded for it): the input under test fails first.
MODEL = "local/qwen2.5-coder-0.5b"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evolve", "--suite", "local:local", "--model", MODEL, "-g", "1", "-k", "1", "--selection", "greedy"],
         "--selection 'greedy'"),
        (["evolve", "--suite", "local:local", "--model", MODEL, "-g", "1", "-k", "1", "--stages", "5,3",
          "--thresholds", "0,0"], "larger than the one before"),
        (["evolve", "--suite", "local:local", "--model", MODEL, "-g", "1", "-k", "1", "--stages", "3,8",
          "--thresholds", "0.5"], "same number"),
        (["evolve", "--suite", "local:no-such-suite", "--model", MODEL, "-g", "1", "-k", "1"], "no-such-suite"),
        (["validate", "--scaffold", "archive:n9", "--suite", "local:local", "--model", MODEL], "no archive node 'n9'"),
        (["validate", "--scaffold", "seed", "--suite", "local:local", "--model", MODEL, "--instances", "nobody-1"],
         "nobody-1"),
    ],
)
def test_bad_command_input_is_one_clear_line(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
