"""The archive of scaffold variants under ``$LIVE_SWE_HOME/archive/``::

    repo.git/               a bare git repository: one commit per node, whose tree is the scaffold
                            and whose git parent is the parent node's commit (so lineage diffs are
                            ``git diff``); each node also has the ref ``refs/nodes/<id>``
    nodes/<id>.json         node metadata (parent, results per instance, cost...), replaced atomically
    validations/<id>.json   recorded ``live-swe validate`` outcomes (what ``scaffold promote`` checks)
    runs/<run>/             the state of each ``live-swe evolve`` run (see :mod:`godel.evolve`)

Only scaffolds that passed the gates and the staged evaluation become nodes. ``checkout_node`` is
what ``--scaffold archive:NODE`` resolves through (``live_swe.scaffolding.refs``).
"""

from __future__ import annotations

import fcntl
import io
import json
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from live_swe.config import home
from live_swe.errors import UserError
from live_swe.infra import files
from live_swe.infra.git import Git, GitFailed, Identity, init
from live_swe.scaffolding.refs import SOURCES as SCAFFOLD_SOURCES
from live_swe.scaffolding.refs import materialize
from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold

NODE_ID_RE = re.compile(r"^n[0-9]{1,9}$")
_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")
_IDENTITY = Identity("live-swe", "live-swe@localhost")


class ArchiveError(UserError):
    """The archive cannot do what was asked; the message says what and what to do."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str))


class Node(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    parent: str | None = None
    commit: str
    created_at: str = ""
    run: str | None = None
    run_key: str = ""  # "root" or the evolve run's child id: makes adding a node idempotent on resume
    suite: str | None = None
    origin: str = ""  # "seed", "path:DIR", or "child of n3"
    generation: int = 0
    results: dict[str, bool] = {}  # instance id -> resolved (selection split only)
    sessions: dict[str, str] = {}  # instance id -> session directory (for diagnosis)
    gpa: dict[str, float | None] = {}  # metric -> mean normalised Goal-Plan-Action score over those sessions
    eval_cost: float = 0.0
    improve_cost: float = 0.0
    task: str = ""  # the self-improvement task that produced this node
    summary: str = ""  # what changed, in one line

    @property
    def resolved(self) -> int:
        return sum(self.results.values())

    @property
    def score(self) -> float | None:
        return self.resolved / len(self.results) if self.results else None

    @property
    def gpa_mean(self) -> float | None:
        values = [v for v in self.gpa.values() if v is not None]
        return round(sum(values) / len(values), 3) if values else None

    @property
    def cost(self) -> float:
        return self.eval_cost + self.improve_cost


class Archive:
    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def default(cls) -> Archive:
        return cls(home() / "archive")

    # -- paths
    @property
    def repo(self) -> Path:
        return self.root / "repo.git"

    @property
    def nodes_dir(self) -> Path:
        return self.root / "nodes"

    @property
    def validations_dir(self) -> Path:
        return self.root / "validations"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    # -- git
    def _git(self, *args: str, work_tree: Path | None = None, index: Path | None = None) -> bytes:
        """git on the archive repository, under the kernel's rules (``live_swe.infra.git``)."""
        git = Git(git_dir=self.repo, work_tree=work_tree, config=_IDENTITY.config(),
                  env={"GIT_INDEX_FILE": str(index)} if index else None)
        try:
            return git.run(*args, binary=True)
        except GitFailed as exc:
            raise ArchiveError(f"archive git {args[0]} failed in {self.repo}: {exc.detail[:400]}") from None

    def _ensure_repo(self) -> None:
        if not (self.repo / "HEAD").exists():
            init(self.repo, bare=True)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer at a time (node ids are allocated under it)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def snapshot_tree(self, directory: Path) -> str:
        """Store ``directory`` (minus .git and caches) as a git tree; returns its id.

        Identical content gives the identical id, so the tree id doubles as a content digest.
        """
        self._ensure_repo()
        with tempfile.TemporaryDirectory(prefix="live-swe-snapshot-") as tmp:
            clean = Path(tmp) / "tree"
            shutil.copytree(directory, clean, ignore=_IGNORE, symlinks=True)
            index = Path(tmp) / "index"
            self._git("add", "-A", "--force", ".", work_tree=clean, index=index)
            return self._git("write-tree", work_tree=clean, index=index).decode().strip()

    def _commit(self, tree: str, parent_commit: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-m", message]
        if parent_commit:
            args += ["-p", parent_commit]
        return self._git(*args).decode().strip()

    # -- nodes
    def node_path(self, node_id: str) -> Path:
        return self.nodes_dir / f"{node_id}.json"

    def _next_id(self) -> str:
        taken = [int(p.stem[1:]) for p in self.nodes_dir.glob("n*.json") if NODE_ID_RE.match(p.stem)]
        return f"n{max(taken, default=-1) + 1}"

    def add_node(self, scaffold_dir: Path, *, parent: str | None = None, **fields: Any) -> Node:
        """Commit ``scaffold_dir`` as a new node (child of ``parent``) and write its metadata."""

        load_scaffold(scaffold_dir)  # only valid scaffolds enter the archive
        parent_commit = self.get(parent).commit if parent else None
        with self.lock():
            tree = self.snapshot_tree(scaffold_dir)
            node_id = self._next_id()
            commit = self._commit(tree, parent_commit, f"{node_id}: {fields.get('summary') or fields.get('origin') or 'scaffold'}")
            self._git("update-ref", f"refs/nodes/{node_id}", commit)
            node = Node(id=node_id, parent=parent, commit=commit, created_at=now(), **fields)
            self.save(node)
        return node

    def save(self, node: Node) -> None:
        write_json_atomic(self.node_path(node.id), node.model_dump())

    def get(self, node_id: str) -> Node:
        path = self.node_path(node_id)
        if not NODE_ID_RE.match(node_id or "") or not path.exists():
            raise ArchiveError(f"no archive node {node_id!r} under {self.root}; "
                               "`live-swe archive show` lists the nodes there are")
        try:
            return Node.model_validate_json(path.read_text())
        except (ValidationError, ValueError) as exc:
            raise ArchiveError(f"{path}: node metadata is unreadable ({exc.__class__.__name__})") from exc

    def nodes(self) -> list[Node]:
        if not self.nodes_dir.is_dir():
            return []
        found = [self.get(p.stem) for p in self.nodes_dir.glob("n*.json") if NODE_ID_RE.match(p.stem)]
        return sorted(found, key=lambda n: int(n.id[1:]))

    def children(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes() if n.parent == node_id]

    def checkout(self, node_id: str, target: Path) -> None:
        """Write the node's scaffold files into ``target`` (created if needed)."""
        node = self.get(node_id)
        data = self._git("archive", "--format=tar", node.commit)
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(target, filter="data")

    def diff(self, node_id: str) -> str:
        """The node's change against its parent (empty for a root)."""
        node = self.get(node_id)
        if not node.parent:
            return ""
        parent = self.get(node.parent)
        return self._git("diff", "--no-ext-diff", "--no-textconv", parent.commit, node.commit).decode(errors="replace")

    # -- validations
    def record_validation(self, record: dict[str, Any]) -> str:
        with self.lock():
            self.validations_dir.mkdir(parents=True, exist_ok=True)
            number = len(list(self.validations_dir.glob("v*.json")))
            while (self.validations_dir / f"v{number}.json").exists():
                number += 1
            record_id = f"v{number}"
            write_json_atomic(self.validations_dir / f"{record_id}.json", {"id": record_id, "created_at": now(), **record})
        return record_id

    def validations(self) -> list[dict[str, Any]]:
        if not self.validations_dir.is_dir():
            return []
        records = []
        for path in self.validations_dir.glob("v*.json"):
            try:
                records.append(json.loads(path.read_text()))
            except ValueError:
                continue
        return sorted(records, key=lambda r: int(str(r.get("id", "v0"))[1:] or 0))


def scaffold_digest(ref: str) -> str:
    """The content digest (git tree id) of the scaffold ``ref`` names, without the user's tool library.

    ``promote`` compares it with the digest a validation recorded, so a ``path:DIR`` edited after
    its validation is not promoted on the strength of the old result.
    """
    with tempfile.TemporaryDirectory(prefix="live-swe-digest-") as tmp:
        target = Path(tmp) / "scaffold"
        materialize(ref, target, library=None)
        return Archive.default().snapshot_tree(target)


def checkout_node(node_id: str, target: Path) -> None:
    """Resolve ``archive:NODE`` (used by ``live_swe.scaffolding.refs.materialize``)."""
    try:
        Archive.default().checkout(node_id, Path(target))
    except ArchiveError as exc:
        raise ScaffoldError(str(exc)) from exc


SCAFFOLD_SOURCES["archive"] = checkout_node
