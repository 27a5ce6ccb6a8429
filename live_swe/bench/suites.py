"""Benchmark suites: SWE-bench Verified / Lite / Pro and our local suites, as one list of instances.

Suite specs (``load_suite``)::

    swebench-verified | swebench-lite       Hugging Face (``datasets``) when online, else the offline
                                            copies in the folder $LIVE_SWE_SWEBENCH_DATA names
    swebench-verified:PATH | swebench-lite:PATH | PATH.parquet | PATH.jsonl | PATH.json
                                            a local file of SWE-bench 5.x rows (Pro rows are detected)
    swebench-pro | swebench-pro:PATH        ScaleAI/SWE-bench_Pro, or a local jsonl of Pro rows
    local:NAME | local:DIR                  evals/suites/NAME/ (or any directory) holding
                                            instances.jsonl (SWE-bench 5.x rows) and optionally
                                            pro_instances.jsonl (Pro rows whose images are local)

Everything here is pure data handling: no Docker, no model. Heavy libraries (``datasets``,
``pyarrow``) are imported only when a suite that needs them is loaded.
"""

from __future__ import annotations

import ast
import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_swe.errors import UserError
from live_swe.resources import resource_path
from live_swe.scaffolding.context import sample_context
from live_swe.scaffolding.refs import materialize
from live_swe.scaffolding.render import render
from live_swe.scaffolding.scaffold import load_scaffold

SWEBENCH_DATASETS = {
    "swebench-verified": ("princeton-nlp/SWE-bench_Verified", "SWE-bench_Verified.test.parquet"),
    "swebench-lite": ("princeton-nlp/SWE-bench_Lite", "SWE-bench_Lite.test.parquet"),
}
PRO_DATASET = "ScaleAI/SWE-bench_Pro"
PRO_IMAGE_REPOSITORY = "jefzda/sweap-images"
SWEBENCH_REPO_DIR = "/testbed"
PRO_REPO_DIR = "/app"
DATA_ENV = "LIVE_SWE_SWEBENCH_DATA"
LOCAL_INSTANCES = "instances.jsonl"
LOCAL_PRO_INSTANCES = "pro_instances.jsonl"
_ROW_SUFFIXES = (".parquet", ".jsonl", ".json")


class SuiteError(UserError):
    """A suite that cannot be loaded or a selection that matches nothing; says what to do."""


@dataclass(frozen=True)
class Instance:
    """One benchmark task, whatever suite it came from."""

    instance_id: str
    suite_kind: str  # "swebench" | "pro" | "local"
    repo: str
    base_commit: str
    problem_statement: str  # the task text the agent gets (Pro: with requirements and interface)
    image: str
    repo_dir: str  # where the repository is inside the image
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    patch: str = ""  # gold patch
    test_patch: str = ""
    row: dict[str, Any] = field(default_factory=dict)  # the raw row, JSON-able, for the harness

    def __hash__(self) -> int:  # the list and dict fields are not hashable; the id is the identity
        return hash((self.suite_kind, self.instance_id))


@dataclass
class Suite:
    name: str  # the spec it was loaded from, e.g. "swebench-verified" or "local:local"
    kind: str  # "swebench" | "pro" | "local" (a local suite may also hold "pro" instances)
    instances: list[Instance]
    source: str = ""  # where the rows came from (dataset name or file), for messages and reports

    @property
    def kinds(self) -> set[str]:
        return {i.suite_kind for i in self.instances} or {self.kind}

    def __len__(self) -> int:
        return len(self.instances)

    def get(self, instance_id: str) -> Instance:
        for instance in self.instances:
            if instance.instance_id == instance_id:
                return instance
        raise SuiteError(f"{self.name}: no instance {instance_id!r}")

    def select(
        self,
        instances: list[str] | str | None = None,
        filter: str | None = None,  # noqa: A002 - the CLI option's name
        slice: str | None = None,  # noqa: A002
    ) -> list[Instance]:
        """The instances chosen by ids, a regex on the id, and a python slice ``A:B[:C]``, in suite order.

        The three narrow one after another (ids, then regex, then slice over what is left).
        """
        chosen = list(self.instances)
        if instances:
            wanted = _id_list(instances)
            known = {i.instance_id for i in chosen}
            unknown = [w for w in wanted if w not in known]
            if unknown:
                shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                raise SuiteError(f"{self.name}: no instance(s) {shown}; check the ids (`--filter REGEX` matches by pattern)")
            wanted_set = set(wanted)
            chosen = [i for i in chosen if i.instance_id in wanted_set]
        if filter:
            try:
                pattern = re.compile(filter)
            except re.error as exc:
                raise SuiteError(f"--filter {filter!r} is not a valid regular expression: {exc}") from None
            chosen = [i for i in chosen if pattern.search(i.instance_id)]
        if slice:
            chosen = chosen[parse_slice(slice)]
        return chosen


    def select_some(self, instances=None, filter=None, slice=None) -> list[Instance]:  # noqa: A002
        """``select``, refusing a selection that matches nothing."""
        chosen = self.select(instances=instances, filter=filter, slice=slice)
        if not chosen:
            raise SuiteError(f"{self.name}: the selection matches no instance (of {len(self)}); "
                             "check --instances / --filter / --slice")
        return chosen


def _id_list(value: list[str] | str) -> list[str]:
    """Ids from a list, or a comma/space separated string (the CLI passes either)."""
    items = [value] if isinstance(value, str) else list(value)
    ids: list[str] = []
    for item in items:
        ids.extend(part for part in re.split(r"[,\s]+", item) if part)
    return ids


def parse_slice(text: str) -> slice:
    """``"A:B"`` (or ``"A:B:C"``, or ``"N"`` for the first N) as a python slice."""
    parts = text.strip().split(":")
    try:
        if len(parts) == 1:
            return slice(0, int(parts[0]))
        if len(parts) > 3:
            raise ValueError
        numbers = [int(p) if p.strip() else None for p in parts]
    except ValueError:
        raise SuiteError(f"--slice {text!r} is not a slice; write START:STOP such as 0:10, 10: or :5") from None
    if len(numbers) == 3 and numbers[2] is not None and numbers[2] < 1:
        raise SuiteError(f"--slice {text!r}: the step must be 1 or more (the selection stays in suite order); "
                         "write START:STOP or START:STOP:STEP, such as 0:10:2")
    return slice(*numbers)


# -- the first prompt ------------------------------------------------------------------------------


def task_text(instance: Instance) -> str:
    """The task the agent gets: the issue text (the scaffold's instance template frames it)."""
    return instance.problem_statement


def render_first_prompt(instance: Instance, scaffold_ref: str = "seed") -> str:
    """The first user message the agent sees for ``instance``, rendered by a real scaffold."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="live-swe-prompt-") as tmp:
        target = Path(tmp) / "scaffold"
        materialize(scaffold_ref, target)
        scaffold = load_scaffold(target)
        context = sample_context()
        context.update(
            task=task_text(instance), repo_dir=instance.repo_dir, repo_map="", repo_instructions="",
            action_format=scaffold.policy.action_format, tools=[], step=0,
        )
        return render(scaffold.template("instance"), context)


# -- rows to instances -----------------------------------------------------------------------------


def decode_list(value: Any, *, where: str = "") -> list[str]:
    """A test list stored as a list, a JSON string, or a python-literal string (Pro)."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays from parquet readers
        return [str(v) for v in value.tolist()]
    if isinstance(value, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(parsed, (list, tuple)):
                return [str(v) for v in parsed]
    raise SuiteError(f"{where}: expected a list of tests, got {str(value)[:80]!r}")


def official_swebench_image(instance_id: str) -> str:
    """The official SWE-bench evaluation image of an instance (Docker Hub ``swebench/``)."""
    return f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_')}:latest".lower()


def pro_problem_statement(row: dict[str, Any]) -> str:
    """Issue text with requirements and interface appended, as the SWE-bench Pro harness builds it."""
    return (
        f"{row.get('problem_statement') or ''}\n\n"
        f"Requirements:\n{row.get('requirements') or ''}\n\n"
        f"New interfaces introduced:\n{row.get('interface') or ''}"
    )


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    clean = {}
    for key, value in row.items():
        if hasattr(value, "tolist"):
            value = value.tolist()
        elif hasattr(value, "isoformat"):
            value = value.isoformat()
        clean[str(key)] = value
    return clean


def _require(row: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    missing = [k for k in keys if not row.get(k)]
    if missing:
        raise SuiteError(f"{where}: row is missing {', '.join(missing)}")


def is_pro_row(row: dict[str, Any]) -> bool:
    return "dockerhub_tag" in row or ("fail_to_pass" in row and "FAIL_TO_PASS" not in row)


def swebench_instance(row: dict[str, Any], *, kind: str = "swebench", where: str = "") -> Instance:
    """An instance from a SWE-bench 5.x row (Verified, Lite, or one of our local rows)."""
    row = _jsonable(row)
    where = f"{where} ({row.get('instance_id', '?')})"
    _require(row, ("instance_id", "repo", "base_commit", "problem_statement"), where)
    image = row.get("image") or ""
    if not image:
        if kind == "local":
            raise SuiteError(f"{where}: a local suite row needs an `image`")
        image = official_swebench_image(row["instance_id"])
    return Instance(
        instance_id=row["instance_id"],
        suite_kind=kind,
        repo=row["repo"],
        base_commit=row["base_commit"],
        problem_statement=row["problem_statement"],
        image=image,
        repo_dir=SWEBENCH_REPO_DIR,
        fail_to_pass=decode_list(row.get("FAIL_TO_PASS"), where=where + " FAIL_TO_PASS"),
        pass_to_pass=decode_list(row.get("PASS_TO_PASS"), where=where + " PASS_TO_PASS"),
        patch=row.get("patch") or "",
        test_patch=row.get("test_patch") or "",
        row=row,
    )


def pro_instance(row: dict[str, Any], *, local_images: bool = False, where: str = "") -> Instance:
    """An instance from a SWE-bench Pro row.

    Official rows run in ``jefzda/sweap-images:<dockerhub_tag>``; rows of a local suite name a local
    image, in ``image`` or else ``dockerhub_tag`` taken as the full image name.
    """
    row = _jsonable(row)
    where = f"{where} ({row.get('instance_id', '?')})"
    _require(row, ("instance_id", "repo", "base_commit", "problem_statement"), where)
    if local_images:
        image = row.get("image") or row.get("dockerhub_tag") or ""
    else:
        image = row.get("image") or (f"{PRO_IMAGE_REPOSITORY}:{row['dockerhub_tag']}" if row.get("dockerhub_tag") else "")
    if not image:
        raise SuiteError(f"{where}: a Pro row needs `dockerhub_tag` (or `image`)")
    return Instance(
        instance_id=row["instance_id"],
        suite_kind="pro",
        repo=row["repo"],
        base_commit=row["base_commit"],
        problem_statement=pro_problem_statement(row),
        image=image,
        repo_dir=PRO_REPO_DIR,
        fail_to_pass=decode_list(row.get("fail_to_pass"), where=where + " fail_to_pass"),
        pass_to_pass=decode_list(row.get("pass_to_pass"), where=where + " pass_to_pass"),
        patch=row.get("patch") or "",
        test_patch=row.get("test_patch") or "",
        row=row,
    )


# -- reading rows ----------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a .parquet, .jsonl or .json (a list, or ``{"instances": [...]}``) file."""
    if not path.is_file():
        raise SuiteError(f"{path}: no such file; pass a .parquet, .jsonl or .json file of instances")
    reader = _ROW_READERS.get(path.suffix.lower())
    if reader is None:
        raise SuiteError(f"{path}: unknown suite file type; use .parquet, .jsonl or .json")
    return reader(path)


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # heavy; only when a parquet suite is read
    except ImportError:
        raise SuiteError("reading .parquet suites needs pyarrow: pip install 'live-swe[bench]'") from None
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds; all mean "unreadable"
        raise SuiteError(f"{path}: not a readable parquet file ({exc})") from None


def _jsonl_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SuiteError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise SuiteError(f"{path}:{number}: each line must be a JSON object")
            rows.append(row)
    return rows


def _json_rows(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, dict) and isinstance(data.get("instances"), list):
        data = data["instances"]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise SuiteError(f"{path}: expected a JSON list of instance objects")
    return data


_ROW_READERS = {".parquet": _parquet_rows, ".jsonl": _jsonl_rows, ".json": _json_rows}


def _rows_to_instances(rows: list[dict[str, Any]], where: str, *, pro: bool | None = None) -> list[Instance]:
    instances = []
    for number, row in enumerate(rows, 1):
        place = f"{where} row {number}"
        if pro if pro is not None else is_pro_row(row):
            instances.append(pro_instance(row, where=place))
        else:
            instances.append(swebench_instance(row, where=place))
    _check_unique(instances, where)
    return instances


def _check_unique(instances: list[Instance], where: str) -> None:
    seen: set[str] = set()
    for instance in instances:
        if instance.instance_id in seen:
            raise SuiteError(f"{where}: instance id {instance.instance_id!r} appears twice")
        seen.add(instance.instance_id)


def find_swebench_data() -> Path | None:
    """The folder of offline SWE-bench copies ($LIVE_SWE_SWEBENCH_DATA), if one is named."""
    override = os.environ.get(DATA_ENV)
    return Path(override).expanduser() if override else None


def _online(host: str = "huggingface.co") -> bool:
    """Whether the Hugging Face hub may be reached (offline flags honoured; a quick probe otherwise)."""
    if any(os.environ.get(flag, "").strip() not in ("", "0", "false", "False")
           for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "LIVE_SWE_OFFLINE")):
        return False
    try:
        with socket.create_connection((host, 443), timeout=3):
            return True
    except OSError:
        return False


def _load_hf(dataset: str) -> list[dict[str, Any]]:
    from datasets import load_dataset  # heavy; only when a hub suite is asked for

    return [dict(r) for r in load_dataset(dataset, split="test")]


def _load_swebench(name: str) -> Suite:
    dataset, filename = SWEBENCH_DATASETS[name]
    problem = "offline"
    if _online():
        try:
            rows = _load_hf(dataset)
            return Suite(name, "swebench", _rows_to_instances(rows, dataset, pro=False), source=dataset)
        except ImportError:
            problem = "the `datasets` package is not installed"
        except SuiteError:
            raise
        except Exception as exc:  # noqa: BLE001 - any hub failure falls back to the local copy
            problem = f"{dataset} could not be loaded ({exc.__class__.__name__})"
    folder = find_swebench_data()
    path = folder / filename if folder else None
    if path is None or not path.is_file():
        raise SuiteError(
            f"{name}: {problem} and no local copy found ({filename} in the folder ${DATA_ENV} names); "
            f"pass a local file instead: {name}:PATH.parquet"
        )
    return Suite(name, "swebench", _rows_to_instances(read_rows(path), str(path), pro=False), source=str(path))


def _load_pro(path: str | None) -> Suite:
    if path:
        file = Path(path).expanduser()
        return Suite(f"swebench-pro:{path}", "pro", _rows_to_instances(read_rows(file), str(file), pro=True),
                     source=str(file))
    if not _online():
        raise SuiteError(f"swebench-pro: {PRO_DATASET} cannot be downloaded offline; pass a local copy: swebench-pro:PATH.jsonl")
    try:
        rows = _load_hf(PRO_DATASET)
    except ImportError:
        raise SuiteError("swebench-pro needs the `datasets` package (pip install 'live-swe[bench]'), "
                         "or pass a local copy: swebench-pro:PATH.jsonl") from None
    except Exception as exc:  # noqa: BLE001
        raise SuiteError(f"swebench-pro: {PRO_DATASET} could not be loaded ({exc}); "
                         "pass a local copy: swebench-pro:PATH.jsonl") from None
    return Suite("swebench-pro", "pro", _rows_to_instances(rows, PRO_DATASET, pro=True), source=PRO_DATASET)


def local_suite_dir(name: str) -> Path:
    """``local:NAME`` → evals/suites/NAME/; a NAME that is a path to a suite directory is used as is."""
    candidate = Path(name).expanduser()
    if (os.sep in name or name.startswith(".")) and candidate.is_dir():
        return candidate
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise SuiteError(f"local:{name}: not a suite name or a suite directory")

    try:
        return resource_path("evals", "suites", name)
    except FileNotFoundError:
        raise SuiteError(f"local:{name}: this installation has no evals/ folder") from None


def load_local_suite(name: str) -> Suite:
    directory = local_suite_dir(name)
    main, pro = directory / LOCAL_INSTANCES, directory / LOCAL_PRO_INSTANCES
    if not main.is_file() and not pro.is_file():
        raise SuiteError(f"local:{name}: {directory} has no {LOCAL_INSTANCES}; "
                         "a local suite is a folder with one SWE-bench row per line in instances.jsonl")
    instances: list[Instance] = []
    if main.is_file():
        for number, row in enumerate(read_rows(main), 1):
            instances.append(swebench_instance(row, kind="local", where=f"{main} row {number}"))
    if pro.is_file():
        for number, row in enumerate(read_rows(pro), 1):
            instances.append(pro_instance(row, local_images=True, where=f"{pro} row {number}"))
    _check_unique(instances, str(directory))
    return Suite(f"local:{name}", "local", instances, source=str(directory))


def load_suite(spec: str) -> Suite:
    """Load a suite from its spec (see the module docstring)."""
    spec = (spec or "").strip()
    if not spec:
        raise SuiteError("no suite given; use swebench-verified, swebench-lite, swebench-pro, local:NAME or a file path")
    kind, sep, value = spec.partition(":")
    if kind in SWEBENCH_DATASETS:
        if not sep:
            return _load_swebench(kind)
        path = Path(value).expanduser()
        instances = _rows_to_instances(read_rows(path), str(path))
        return Suite(spec, _suite_kind(instances), instances, source=str(path))
    if kind == "swebench-pro":
        return _load_pro(value if sep else None)
    if kind == "local" and sep:
        return load_local_suite(value)
    path = Path(spec).expanduser()
    if path.suffix.lower() in _ROW_SUFFIXES:
        instances = _rows_to_instances(read_rows(path), str(path))
        return Suite(spec, _suite_kind(instances), instances, source=str(path))
    if path.is_dir() and ((path / LOCAL_INSTANCES).is_file() or (path / LOCAL_PRO_INSTANCES).is_file()):
        return load_local_suite(str(path))
    raise SuiteError(
        f"unknown suite {spec!r}; use swebench-verified, swebench-lite, swebench-pro, local:NAME, "
        "or a path to a .parquet / .jsonl / .json file of instances"
    )


def _suite_kind(instances: list[Instance]) -> str:
    kinds = {i.suite_kind for i in instances}
    return "pro" if kinds == {"pro"} else "swebench"
