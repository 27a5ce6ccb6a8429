"""A model that cannot answer is refused before a session, a batch or an archive exists.

An unknown provider and a provider's missing key are found by litellm's own tables, as the real
commands run them in child processes; models that need no key (servers of the user's own, local
and scripted models) pass.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBMIT, write_script

from live_swe.models.base import ModelError
from live_swe.models.preflight import check_litellm_model
from live_swe.models.resolve import check_model, make_model

REPO_ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "live_swe.cli.main"]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    # On a model that is refused late, these would create a session and ask the provider (with
    # retries): the timeout is only there to end such a run.
    return subprocess.run([*CLI, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          cwd=cwd or REPO_ROOT, timeout=120)


def assert_refused(out: subprocess.CompletedProcess, *expected: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("live-swe: error: "), out.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def nothing_under(path: Path) -> bool:
    return not path.exists() or not any(path.iterdir())


@pytest.mark.parametrize("model, expected", [
    ("nonsense/model", ("unknown model provider 'nonsense'", "docs.litellm.ai/docs/providers")),
    ("openai/gpt-5-mini", ("needs OPENAI_API_KEY", "not set")),
    ("anthropic/claude-sonnet-4-5", ("needs ANTHROPIC_API_KEY",)),
])
def test_run_refuses_before_a_session_exists(model, expected, git_repo, live_swe_home):
    out = cli("run", "-t", "fix it", "--yolo", "--repo", str(git_repo), "--model", model)
    assert_refused(out, *expected)
    assert nothing_under(live_swe_home / "sessions")


def test_run_with_json_says_no_session_was_made(git_repo, live_swe_home):
    import json

    out = cli("run", "-t", "fix it", "--yolo", "--json", "--repo", str(git_repo), "--model", "openai/gpt-5-mini")
    assert out.returncode == 2 and "OPENAI_API_KEY" in out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "error" and result["session_id"] is None
    assert nothing_under(live_swe_home / "sessions")


def test_bench_run_refuses_before_its_output_folder_exists(tmp_path):
    for model, expected in (("nonsense/model", "unknown model provider 'nonsense'"),
                            ("openai/gpt-5-mini", "needs OPENAI_API_KEY")):
        out_dir = tmp_path / "batch"
        out = cli("bench", "run", "local:local", "--model", model, "--out", str(out_dir), "--no-progress")
        assert_refused(out, expected)
        assert not out_dir.exists()


def test_validate_and_evolve_refuse_before_anything_is_written(live_swe_home):
    before = sorted(p.name for p in live_swe_home.iterdir())
    validate = cli("validate", "--scaffold", "seed", "--suite", "local:local", "--model", "openai/gpt-5-mini")
    assert_refused(validate, "needs OPENAI_API_KEY")
    evolve = cli("evolve", "--suite", "local:local", "--model", "nonsense/model", "--generations", "1",
                 "--children", "1")
    assert_refused(evolve, "unknown model provider 'nonsense'")
    improver = cli("evolve", "--suite", "local:local", "--model", "ollama/qwen2.5-coder:1.5b",
                   "--improver-model", "anthropic/claude-sonnet-4-5", "--generations", "1", "--children", "1")
    assert_refused(improver, "needs ANTHROPIC_API_KEY")
    assert sorted(p.name for p in live_swe_home.iterdir()) == before


def test_models_that_need_no_key_pass(tmp_path, monkeypatch):
    monkeypatch.delenv("LIVE_SWE_API_BASE", raising=False)
    check_litellm_model("openai/my-server-model", api_base="http://127.0.0.1:8080/v1")  # a server of one's own
    check_litellm_model("ollama/qwen2.5-coder:1.5b")  # Ollama's own address by default
    check_litellm_model("hosted_vllm/qwen")
    check_litellm_model("openai/gpt-5-mini", api_key="sk-given-directly")
    make_model("openai/my-server-model", api_base="http://127.0.0.1:8080/v1")
    check_model(f"scripted:{write_script(tmp_path / 'replies.yaml', [SUBMIT])}")
    check_model("local/qwen2.5-coder-0.5b")  # embedded: not loaded, no key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    check_model("openai/gpt-5-mini")
    monkeypatch.setenv("LIVE_SWE_API_BASE", "http://127.0.0.1:8080/v1")  # the configured server
    monkeypatch.delenv("OPENAI_API_KEY")
    check_model("openai/my-server-model")


def test_an_api_base_does_not_make_an_unknown_provider_known():
    with pytest.raises(ModelError, match="unknown model provider 'nonsense'"):
        check_model("nonsense/model", api_base="http://127.0.0.1:8080/v1")


def test_the_check_prints_nothing_of_litellm_s_own(capfd):
    with pytest.raises(ModelError):
        check_model("nonsense/model")
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini", "openrouter"])
def test_the_quick_key_table_says_what_litellm_says(provider, monkeypatch):
    """The providers checked without importing litellm: litellm reads their keys from the same variables."""
    import litellm

    from live_swe.models.preflight import KEY_VARIABLES

    model = {"anthropic": "anthropic/claude-sonnet-4-5", "openai": "openai/gpt-5-mini",
             "gemini": "gemini/gemini-2.5-pro", "openrouter": "openrouter/anthropic/claude-sonnet-4.5"}[provider]
    for variables in KEY_VARIABLES.values():
        for variable in variables:
            monkeypatch.delenv(variable, raising=False)
    assert set(litellm.validate_environment(model=model)["missing_keys"]) == set(KEY_VARIABLES[provider])
    with pytest.raises(ModelError, match=" or ".join(KEY_VARIABLES[provider])):
        check_litellm_model(model)
    for variable in KEY_VARIABLES[provider]:  # any one of them will do, for litellm as for the check
        monkeypatch.setenv(variable, "sk-test-not-a-real-key")
        assert litellm.validate_environment(model=model)["keys_in_environment"]
        check_litellm_model(model)
        monkeypatch.delenv(variable)


def test_the_prefixes_read_from_litellm_s_files_hold_every_provider_litellm_knows():
    """The quick refusal of an unknown prefix reads litellm's files without importing litellm; every
    provider litellm itself lists must be among what it reads."""
    import litellm

    from live_swe.models.preflight import _litellm_prefixes

    known = _litellm_prefixes()
    assert known, "litellm's files could not be read: the quick refusal would never apply"
    listed = {getattr(p, "value", p) for p in litellm.provider_list}
    assert listed <= known, sorted(listed - known)
    assert "nonsense" not in known
