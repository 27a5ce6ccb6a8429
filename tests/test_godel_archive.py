"""The archive: nodes are real commits, checkouts reproduce them, archive:NODE works as a ref."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from godel.archive import Archive, ArchiveError
from live_swe.scaffolding.refs import materialize
from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold


def _seed(tmp_path):
    target = tmp_path / "seed"
    materialize("seed", target, library=None)
    return target


def test_nodes_are_commits_with_lineage_and_checkout_reproduces_them(tmp_path, live_swe_home):
    archive = Archive.default()
    seed = _seed(tmp_path)
    tool = seed / "tools" / "find-def"
    tool.write_text("#!/bin/bash\n# live-swe-tool: find-def\n# description: d\n# usage: find-def NAME\ngrep -rn \"def $1\" .\n")
    tool.chmod(0o755)
    root = archive.add_node(seed, origin="seed", results={"a": True, "b": False})
    child_dir = tmp_path / "child"
    archive.checkout(root.id, child_dir)
    assert os.access(child_dir / "tools" / "find-def", os.X_OK)
    (child_dir / "prompts" / "system.j2").write_text((child_dir / "prompts" / "system.j2").read_text() + "\nBe brief.\n")
    child = archive.add_node(child_dir, parent=root.id, origin=f"child of {root.id}", results={"a": True, "b": True})

    assert [n.id for n in archive.nodes()] == ["n0", "n1"]
    assert archive.get("n1").parent == "n0" and archive.get("n1").score == 1.0
    assert archive.children("n0")[0].id == "n1"
    diff = archive.diff(child.id)
    assert "+Be brief." in diff and "prompts/system.j2" in diff
    parent_of_commit = subprocess.run(["git", "--git-dir", str(archive.repo), "rev-parse", f"{child.commit}^"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    assert parent_of_commit == root.commit
    meta = json.loads(archive.node_path("n1").read_text())
    assert meta["parent"] == "n0" and meta["results"] == {"a": True, "b": True}

    # archive:NODE resolves through the kernel's scaffold references.
    target = tmp_path / "session-scaffold"
    materialize("archive:n1", target, library=None)
    assert "Be brief." in (target / "prompts" / "system.j2").read_text()
    assert load_scaffold(target).tools[0].name == "find-def"


def test_unknown_node_is_a_clear_error(tmp_path):
    with pytest.raises(ScaffoldError, match="no archive node 'n42'.*archive show"):
        materialize("archive:n42", tmp_path / "x", library=None)
    with pytest.raises(ArchiveError):
        Archive.default().get("../etc")


def test_invalid_scaffolds_never_become_nodes(tmp_path):
    seed = _seed(tmp_path)
    with (seed / "scaffold.yaml").open("a") as handle:
        handle.write("bogus_key: 1\n")
    with pytest.raises(ScaffoldError, match="bogus_key"):
        Archive.default().add_node(seed, origin="broken")
    assert Archive.default().nodes() == []


def test_identical_content_has_the_same_digest(tmp_path):
    archive = Archive.default()
    a, b = _seed(tmp_path), tmp_path / "copy"
    materialize(f"path:{a}", b, library=None)
    assert archive.snapshot_tree(a) == archive.snapshot_tree(b)
    (b / "hooks.py").write_text((b / "hooks.py").read_text() + "\n# changed\n")
    assert archive.snapshot_tree(a) != archive.snapshot_tree(b)


def test_validations_are_recorded_and_listed():
    archive = Archive.default()
    first = archive.record_validation({"scaffold": "archive:n1", "verdict": "better"})
    second = archive.record_validation({"scaffold": "archive:n2", "verdict": "worse"})
    assert (first, second) == ("v0", "v1")
    assert [v["verdict"] for v in archive.validations()] == ["better", "worse"]
