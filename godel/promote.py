"""Make a scaffold the user's default (``scaffold:`` in ``$LIVE_SWE_HOME/config.yaml``).

Only a scaffold whose exact content has a recorded ``better`` validation is promoted, unless
forced. A scaffold that is not already an archive node is added to the archive first, so the
default points at content that can no longer change under it (a ``path:`` folder can).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from godel.archive import Archive, scaffold_digest
from godel.validate import latest_better
from live_swe.config import config_path, load_settings
from live_swe.errors import UserError
from live_swe.infra import files
from live_swe.scaffolding.refs import materialize


@dataclass
class Promotion:
    ref: str  # what config.yaml now says
    validation: dict[str, Any] | None
    forced: bool


def _write_config(scaffold_ref: str) -> None:
    path = config_path()
    data: dict[str, Any] = {}
    if path.exists():
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise UserError(f"{path}: must be a mapping of settings; fix it before promoting")
        data = loaded
    data["scaffold"] = scaffold_ref
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, yaml.safe_dump(data, sort_keys=False))


def promote(ref: str, *, force: bool = False, archive: Archive | None = None) -> Promotion:
    archive = archive or Archive.default()
    if ref in ("", "seed"):
        _write_config("seed")  # back to the shipped scaffold needs no evidence
        return Promotion("seed", None, force)
    digest = scaffold_digest(ref)
    validation = latest_better(archive, digest)
    if validation is None and not force:
        raise UserError(
            f"{ref} has no recorded 'better' validation for its current content; run "
            f"`live-swe validate --scaffold {ref} --suite SUITE --model MODEL` first, or pass --force"
        )
    target = ref
    if not ref.startswith("archive:"):
        with tempfile.TemporaryDirectory(prefix="live-swe-promote-") as tmp:
            folder = Path(tmp) / "scaffold"
            materialize(ref, folder, library=None)
            node = archive.add_node(folder, origin=ref, summary=f"promoted from {ref}")
        target = f"archive:{node.id}"
    _write_config(target)
    load_settings()  # the file must still be a valid configuration
    return Promotion(target, validation, force and validation is None)
