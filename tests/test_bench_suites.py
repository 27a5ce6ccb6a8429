"""Suites: the offline SWE-bench Verified / Lite copies, Pro rows, local suites, selection, the first prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_git_repo

from live_swe.bench.suites import (
    SuiteError,
    find_swebench_data,
    load_suite,
    parse_slice,
    render_first_prompt,
    task_text,
)

# Six real SWE-bench Verified rows (astropy, django, flask, requests, pytest, sympy), unchanged.
VERIFIED_ROWS = Path(__file__).resolve().parent / "fixtures" / "swebench_verified_rows.jsonl"


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _parquet_ids(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["instance_id"]).column("instance_id").to_pylist()


@pytest.fixture
def offline_copies(tmp_path, monkeypatch):
    """A folder of offline copies, as $LIVE_SWE_SWEBENCH_DATA names one, made of the shipped rows:
    Verified holds all six, Lite the first four (the official files are parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in VERIFIED_ROWS.read_text().splitlines() if line.strip()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "SWE-bench_Verified.test.parquet")
    pq.write_table(pa.Table.from_pylist(rows[:4]), tmp_path / "SWE-bench_Lite.test.parquet")
    monkeypatch.setenv("LIVE_SWE_SWEBENCH_DATA", str(tmp_path))
    assert find_swebench_data() == tmp_path
    return tmp_path


@pytest.fixture(scope="module")
def real_rows():
    return load_suite(f"swebench-verified:{VERIFIED_ROWS}")


# -- SWE-bench Verified / Lite ---------------------------------------------------------------------


def test_verified_and_lite_load_offline_from_the_shared_copies(offline, offline_copies):
    verified = load_suite("swebench-verified")
    lite = load_suite("swebench-lite")
    assert (len(verified), len(lite)) == (6, 4)
    assert verified.source.endswith("SWE-bench_Verified.test.parquet") and verified.kind == "swebench"
    assert [i.instance_id for i in verified.instances] == _parquet_ids(offline_copies / "SWE-bench_Verified.test.parquet")
    assert [i.instance_id for i in lite.instances] == _parquet_ids(offline_copies / "SWE-bench_Lite.test.parquet")


def test_an_instance_carries_what_the_harness_needs(real_rows):
    instance = real_rows.get("django__django-11099")
    row = instance.row
    assert instance.suite_kind == "swebench" and instance.repo == "django/django" and instance.repo_dir == "/testbed"
    assert instance.image == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest" == row["image"]
    assert instance.fail_to_pass == json.loads(row["FAIL_TO_PASS"]) and instance.fail_to_pass
    assert instance.pass_to_pass == json.loads(row["PASS_TO_PASS"])
    assert instance.patch.startswith("diff --git") and instance.test_patch.startswith("diff --git")
    assert json.loads(json.dumps(row)) == row  # the raw row stays JSON-able for the harness


def test_the_official_image_name_is_derived_when_a_row_has_none(tmp_path, real_rows):
    row = dict(real_rows.get("astropy__astropy-12907").row)
    del row["image"]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    assert load_suite(str(path)).instances[0].image == "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"


def test_without_network_or_a_local_copy_the_error_says_to_pass_a_path(offline, monkeypatch, tmp_path):
    monkeypatch.setenv("LIVE_SWE_SWEBENCH_DATA", str(tmp_path / "nothing-here"))
    with pytest.raises(SuiteError, match=r"swebench-lite:PATH"):
        load_suite("swebench-lite")


# -- selection -------------------------------------------------------------------------------------


def test_filters_and_slices_select_what_they_say(real_rows):
    verified = real_rows
    all_ids = [i.instance_id for i in verified.instances]
    django = [i.instance_id for i in verified.select(filter=r"^django__")]
    assert django == [i for i in all_ids if i.startswith("django__")] and 0 < len(django) < len(all_ids)
    assert [i.instance_id for i in verified.select(slice="1:4")] == all_ids[1:4]
    assert [i.instance_id for i in verified.select(slice="5")] == all_ids[:5]
    assert [i.instance_id for i in verified.select(slice="-3:")] == all_ids[-3:]
    assert [i.instance_id for i in verified.select(filter="sympy|django", slice="0:1")] == [
        i for i in all_ids if "sympy" in i or "django" in i][:1]
    picked = [all_ids[5], all_ids[1], all_ids[3]]
    assert [i.instance_id for i in verified.select(instances=picked)] == [all_ids[1], all_ids[3], all_ids[5]]
    assert [i.instance_id for i in verified.select(instances=f"{all_ids[3]},{all_ids[1]}")] == [all_ids[1], all_ids[3]]


def test_a_bad_selection_is_a_clear_error(real_rows):
    with pytest.raises(SuiteError, match="no instance"):
        real_rows.select(instances=["django__django-0"])
    with pytest.raises(SuiteError, match="not a valid regular expression"):
        real_rows.select(filter="django[")
    with pytest.raises(SuiteError, match="not a slice"):
        parse_slice("a:b")
    for step in ("0", "-1"):
        with pytest.raises(SuiteError, match="the step must be 1 or more"):
            real_rows.select(slice=f"0:2:{step}")
    assert [i.instance_id for i in real_rows.select(slice="0:6:2")] == [
        "astropy__astropy-12907", "pallets__flask-5014", "pytest-dev__pytest-5262"]
    with pytest.raises(SuiteError, match="the selection matches no instance"):
        real_rows.select_some(filter="nothing-matches")


# -- the first prompt ------------------------------------------------------------------------------


def test_an_instance_renders_into_the_first_prompt_the_agent_sends(real_rows, tmp_path):
    """The real seed templates, through the agent's own start(): same text as render_first_prompt."""
    from live_swe.agent.interfaces import StaticScaffold
    from live_swe.agent.loop import Agent
    from live_swe.config import KernelLimits
    from live_swe.environments.local import LocalEnvironment
    from live_swe.models.scripted import ScriptedModel
    from live_swe.scaffolding.refs import materialize
    from live_swe.scaffolding.scaffold import load_scaffold
    from live_swe.session.store import SessionStore

    instance = real_rows.get("sympy__sympy-20590")
    rendered = render_first_prompt(instance)
    assert instance.problem_statement.strip() in rendered
    assert "/testbed" in rendered

    repo = make_git_repo(tmp_path / "repo", {"README.md": "x\n"})
    session = SessionStore(tmp_path / "sessions").create(task=task_text(instance), model="scripted")
    materialize("seed", session.scaffold_dir)
    env = LocalEnvironment(repo, scaffold_dir=session.scaffold_dir)
    agent = Agent(model=ScriptedModel([]), env=env, session=session,
                  guard=StaticScaffold(load_scaffold(session.scaffold_dir)), limits=KernelLimits())
    agent.start(task_text(instance))
    first_user = agent.messages[1]
    assert first_user["role"] == "user"
    assert first_user["content"].replace(env.repo_dir, "/testbed") == rendered


# -- SWE-bench Pro ---------------------------------------------------------------------------------

PRO_ROW = {
    "instance_id": "instance_acme__widgets-0123abcd-v9f8e7d6",
    "repo": "acme/widgets",
    "base_commit": "0123abcd" * 5,
    "patch": "diff --git a/w.py b/w.py\n",
    "test_patch": "diff --git a/test_w.py b/test_w.py\n",
    "problem_statement": "Widgets lose their colour after a reload.",
    "requirements": "- `Widget.reload()` must keep `colour`.",
    "interface": "No new interfaces are introduced.",
    "repo_language": "python",
    "fail_to_pass": "['test_w.py::test_reload_keeps_colour', 'test_w.py::test_reload_twice']",
    "pass_to_pass": "['test_w.py::test_create']",
    "issue_specificity": "['major_bug']",
    "before_repo_set_cmd": "git checkout 0123abcd -- test_w.py",
    "selected_test_files_to_run": "['test_w.py']",
    "dockerhub_tag": "acme.widgets-acme__widgets-0123abcd",
}


def test_pro_rows_parse_as_the_pro_harness_reads_them(tmp_path):
    path = tmp_path / "pro.jsonl"
    second = {**PRO_ROW, "instance_id": "instance_acme__widgets-2", "fail_to_pass": '["t::a"]', "pass_to_pass": ""}
    path.write_text(json.dumps(PRO_ROW) + "\n" + json.dumps(second) + "\n")
    for spec in (f"swebench-pro:{path}", str(path)):
        suite = load_suite(spec)
        assert suite.kind == "pro" and len(suite) == 2
        instance = suite.instances[0]
        assert instance.suite_kind == "pro" and instance.repo_dir == "/app"
        assert instance.image == "jefzda/sweap-images:acme.widgets-acme__widgets-0123abcd"
        assert instance.fail_to_pass == ["test_w.py::test_reload_keeps_colour", "test_w.py::test_reload_twice"]
        assert instance.pass_to_pass == ["test_w.py::test_create"]
        assert instance.problem_statement == (
            "Widgets lose their colour after a reload.\n\n"
            "Requirements:\n- `Widget.reload()` must keep `colour`.\n\n"
            "New interfaces introduced:\nNo new interfaces are introduced."
        )
        assert instance.row["before_repo_set_cmd"] == PRO_ROW["before_repo_set_cmd"]
        assert (suite.instances[1].fail_to_pass, suite.instances[1].pass_to_pass) == (["t::a"], [])
    assert "/app" in render_first_prompt(suite.instances[0])


def test_a_broken_pro_row_names_the_file_and_the_problem(tmp_path):
    path = tmp_path / "pro.jsonl"
    path.write_text(json.dumps({**PRO_ROW, "fail_to_pass": "not a list"}) + "\n")
    with pytest.raises(SuiteError, match=r"pro\.jsonl row 1 .*fail_to_pass"):
        load_suite(f"swebench-pro:{path}")
    path.write_text(json.dumps(PRO_ROW) + "\n{oops\n")
    with pytest.raises(SuiteError, match=r"pro\.jsonl:2: not valid JSON"):
        load_suite(f"swebench-pro:{path}")


# -- local suites ----------------------------------------------------------------------------------


def _local_row(instance_id: str) -> dict:
    return {
        "instance_id": instance_id, "repo": "example/calc", "base_commit": "abc", "patch": "p", "test_patch": "t",
        "problem_statement": f"Fix {instance_id}.", "hints_text": "", "version": "1.0",
        "FAIL_TO_PASS": '["tests/test_a.py::test_a"]', "PASS_TO_PASS": "[]", "environment_setup_commit": "abc",
        "eval_script": "#!/bin/bash\n", "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail",
        "image": f"live-swe-local/{instance_id}:latest",
    }


def test_a_local_suite_directory_holds_swebench_and_pro_rows(tmp_path):
    directory = tmp_path / "mine"
    directory.mkdir()
    (directory / "instances.jsonl").write_text("".join(json.dumps(_local_row(f"example__calc-{n}")) + "\n" for n in (1, 2)))
    (directory / "pro_instances.jsonl").write_text(json.dumps({**PRO_ROW, "dockerhub_tag": "live-swe-local/pro-1:latest"}) + "\n")
    suite = load_suite(f"local:{directory}")
    assert suite.kind == "local" and suite.kinds == {"local", "pro"}
    assert [i.instance_id for i in suite.instances] == ["example__calc-1", "example__calc-2", PRO_ROW["instance_id"]]
    assert suite.instances[0].image == "live-swe-local/example__calc-1:latest"
    assert suite.instances[2].image == "live-swe-local/pro-1:latest"  # a local image, not jefzda/...
    assert suite.instances[2].repo_dir == "/app"
    assert load_suite(str(directory)).kinds == suite.kinds  # a bare directory path works too


def test_local_names_resolve_under_evals_suites():
    from live_swe.resources import resource_path

    with pytest.raises(SuiteError, match=r"local:no-such-suite: .*no instances\.jsonl"):
        load_suite("local:no-such-suite")
    assert (resource_path("evals", "suites", "local") / "instances.jsonl").is_file()
    suite = load_suite("local:local")
    assert suite.kind == "local" and len(suite) >= 12
    assert all(i.image and i.fail_to_pass for i in suite.instances)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "no suite given"),
        ("swebench-bogus", "unknown suite"),
        ("local:../no-such-live-swe-suite", "not a suite name"),
        ("/nowhere/rows.parquet", "no such file"),
    ],
)
def test_bad_suite_specs_are_explained(spec, message):
    with pytest.raises(SuiteError, match=message):
        load_suite(spec)


def test_duplicate_ids_are_refused(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([_local_row("a__b-1"), _local_row("a__b-1")]))
    with pytest.raises(SuiteError, match="appears twice"):
        load_suite(str(path))


def test_loading_a_suite_imports_no_heavy_package(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(_local_row("a__b-1")) + "\n")
    code = ("import sys; from live_swe.bench.suites import load_suite; load_suite(sys.argv[1]); "
            "import live_swe.bench.batch; "
            "print(sorted(m for m in ('datasets', 'docker', 'litellm', 'swebench') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent, check=True)
    assert out.stdout.strip() == "[]"
