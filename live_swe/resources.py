"""The one lookup for the data folders the wheel ships (scaffold, prompts, tools, evals).

In a source checkout they sit at the repository root; in an installed wheel they are under
``live_swe/_data``. They are data, never import packages.
"""

from __future__ import annotations

from pathlib import Path

DATA_FOLDERS = ("scaffold", "prompts", "tools", "evals")

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_path(folder: str, *parts: str) -> Path:
    """Path of a shipped data folder (or a file inside it)."""
    if folder not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {folder!r}; expected one of {DATA_FOLDERS}")
    for root in (_PACKAGE_DIR / "_data", _PACKAGE_DIR.parent):
        candidate = root / folder
        if candidate.is_dir():
            return candidate.joinpath(*parts)
    raise FileNotFoundError(f"live-swe data folder {folder!r} is missing from this installation")
