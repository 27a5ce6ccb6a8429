"""Attacks on the kernel's own git: a repository, a scaffold history or an archive whose git directory
names programs (hooks, fsmonitor, filters, external diff, textconv, pager, signing...). The kernel's
git runs with a fixed configuration: none of them runs, whoever wrote them (the agent without a
sandbox, or whoever sent the session). Real git, real runs with a scripted model, the real CLI."""

from __future__ import annotations

import json
import shutil

from attack_helpers import cli, plant_traps, sprung
from conftest import SUBMIT, bash_reply, run_git, write_script
from test_evolution_support import FIND_DEF, events_of, run_script, session_dir, tool_reply

from godel.archive import Archive
from live_swe.evolution.history import CONFIG_TEXT
from live_swe.infra.git import user_identity
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.scaffolding.refs import materialize
from live_swe.session.store import SessionStore
from live_swe.tui.worktree import WorkTree

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")
NOTE = bash_reply("echo new > notes.txt", "A note.")


def test_a_run_on_a_trapped_repository_runs_none_of_its_programs(git_repo):
    """Base commit, repository map and patch extraction (with a scratch index) in the repository."""
    witness = plant_traps(git_repo / ".git")
    result, _ = run_script(git_repo, [FIX, NOTE, SUBMIT])
    assert sprung(witness) == ""
    assert result.status == "submitted", result.message
    # the patch is the files' real bytes (no clean filter, no textconv), new files included
    assert "+    return a + b" in result.patch and "+new" in result.patch


def test_the_users_global_and_system_git_config_take_no_part(git_repo, tmp_path, monkeypatch):
    witness = tmp_path / "witness"
    trap = f"[core]\n\tfsmonitor = echo fsmonitor >> '{witness}'; exit 1\n[diff]\n\texternal = echo external >> '{witness}'\n"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".gitconfig").write_text(trap)
    (tmp_path / "system.cfg").write_text(trap)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "system.cfg"))
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.delenv(name, raising=False)
    result, _ = run_script(git_repo, [FIX, SUBMIT])
    assert sprung(witness) == ""
    assert result.status == "submitted" and "+    return a + b" in result.patch


def test_config_and_hooks_written_into_the_history_never_run(git_repo, tmp_path):
    """Mid-run, the history's config gets core.hooksPath, an fsmonitor and drivers; the next scaffold
    commit (a tool the agent registers) runs none of them and the config is the kernel's again."""
    witness = tmp_path / "witness"
    planted = []

    def plant(event):
        if event.get("t") == "step" and not planted:
            [session] = SessionStore.default().root.iterdir()
            planted.append(plant_traps(session / "scaffold.git", witness))

    model = ScriptedModel([Reply(r) for r in [NOTE, tool_reply("find-def", FIND_DEF), bash_reply("find-def add"), SUBMIT]])
    request = RunRequest(task="Make add() add.", model="scripted:test", repo=git_repo)
    result = start_run(request, RunHooks(model_factory=lambda name: model, observers=[plant]))
    assert planted and sprung(witness) == ""
    assert result.status == "submitted"
    [commit] = [e for e in events_of(result.session_id, "scaffold") if e["kind"] == "commit"]
    # the tool is announced in the observation of the step that registered it
    assert commit["files"] == ["tools/find-def"] and "tool `find-def` registered" in model.seen[2][-1]["content"]
    history = session_dir(result.session_id) / "scaffold.git"
    assert (history / "config").read_text() == CONFIG_TEXT
    assert run_git(history, "rev-parse", "HEAD").strip() == commit["rev"]


def test_sessions_diff_and_show_of_a_received_session_run_nothing(git_repo):
    result, _ = run_script(git_repo, [tool_reply("find-def", FIND_DEF), SUBMIT])
    witness = plant_traps(session_dir(result.session_id) / "scaffold.git")
    [commit] = [e for e in events_of(result.session_id, "scaffold") if e["kind"] == "commit"]
    everything = cli("sessions", "diff", result.session_id)
    one = cli("sessions", "diff", result.session_id, commit["rev"][:10])
    shown = cli("sessions", "show", result.session_id, "--json")
    assert sprung(witness) == ""
    for out in (everything, one, shown):
        assert out.returncode == 0, out.stderr
    for out in (everything, one):
        assert "+# live-swe-tool: find-def" in out.stdout and "tools/find-def" in out.stdout
    assert json.loads(shown.stdout)["tools"] == ["find-def"]


def test_resume_of_a_received_session_runs_no_fsmonitor_or_hook(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [tool_reply("find-def", FIND_DEF), FIX, SUBMIT])
    first = json.loads(cli("run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                           "--step-limit", "1", "--json").stdout)
    assert first["status"] == "limits_exceeded"
    in_history = plant_traps(session_dir(first["session_id"]) / "scaffold.git")
    in_repository = plant_traps(git_repo / ".git")
    done = cli("resume", first["session_id"], "--yolo", "--step-limit", "5", "--json")
    assert sprung(in_history) == "" and sprung(in_repository) == ""
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "submitted" and "+    return a + b" in result["patch"]


def test_keep_undo_discard_run_nothing_and_commit_as_the_person(git_repo):
    """The TUI's keep/discard: the person's identity is read before the run and passed explicitly;
    hooks, fsmonitor, filters and signing planted in .git/ during the run never run."""
    identity = user_identity(git_repo)
    assert identity is not None and identity.name == "Dev"
    base = run_git(git_repo, "rev-parse", "HEAD").strip()
    (git_repo / "README.md").write_text("# my own edit\n")
    tree = WorkTree(git_repo, identity)
    stash = tree.stash_user_changes("s1")
    witness = plant_traps(git_repo / ".git")  # as the agent could, while it runs
    run_git(git_repo, "config", "user.name", "Mallory")
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (git_repo / "notes.txt").write_text("new\n")

    kept = tree.keep("s1", "Fix add", base)
    assert sprung(witness) == ""
    assert run_git(git_repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", kept.sha).strip() == \
        "Dev <dev@example.com>|Dev <dev@example.com>|Fix add"
    assert run_git(git_repo, "ls-tree", "--name-only", kept.sha).split() == ["README.md", "calc.py", "notes.txt"]
    assert run_git(git_repo, "cat-file", "blob", f"{kept.sha}:calc.py").endswith("a + b\n")
    tree.undo(kept)
    assert tree.discard(base) == ["calc.py", "notes.txt"]
    assert tree.restore_user_changes(stash) is None
    assert sprung(witness) == ""
    assert (git_repo / "README.md").read_text() == "# my own edit\n"
    assert (git_repo / "calc.py").read_text().endswith("a - b\n") and not (git_repo / "notes.txt").exists()


def test_the_archive_runs_nothing_its_repository_names(tmp_path):
    archive = Archive(tmp_path / "archive")
    seed = tmp_path / "seed"
    materialize("seed", seed, library=None)
    root = archive.add_node(seed, origin="seed")
    witness = plant_traps(archive.repo)
    child = tmp_path / "child"
    shutil.copytree(seed, child)
    (child / "prompts" / "system.j2").write_text((child / "prompts" / "system.j2").read_text() + "\nBe brief.\n")
    node = archive.add_node(child, parent=root.id, origin="child")
    diff = archive.diff(node.id)
    archive.checkout(node.id, tmp_path / "out")
    assert sprung(witness) == ""
    assert "+Be brief." in diff
    assert (tmp_path / "out" / "prompts" / "system.j2").read_text().endswith("Be brief.\n")
