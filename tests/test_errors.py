"""One exception tree: every error live-swe raises on purpose is a LiveSweError, and sits under
the branch that says who can act on it (the person, the infrastructure, the model)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import godel
import live_swe
from live_swe.agent.parse import FormatError
from live_swe.config import ConfigError
from live_swe.environments.base import EnvironmentError_
from live_swe.errors import InfrastructureError, LiveSweError, ToldToModel, UserError
from live_swe.evolution.gates import Refused
from live_swe.infra.git import GitFailed
from live_swe.models.base import ModelError
from live_swe.scaffolding.scaffold import ScaffoldError
from live_swe.session.store import SessionError


def _project_exceptions() -> dict[str, type[BaseException]]:
    found = {}
    for package in (live_swe, godel):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if module.name.startswith("live_swe.tui") or module.name.endswith("worker_main"):
                continue  # the TUI needs textual; the worker runs as its own program
            for name, value in vars(importlib.import_module(module.name)).items():
                if (inspect.isclass(value) and issubclass(value, BaseException)
                        and value.__module__ == module.name and not name.startswith("_")):
                    found[f"{module.name}.{name}"] = value
    return found


# Subclasses of a builtin the callers catch as that builtin (a file that is not a regular file is
# an OSError; a judge's unreadable verdict a ValueError), and the guard against a programming error.
BUILTIN_KINDS = {"NotARegularFile", "DamagedFile", "BadVerdict", "SplitLeak"}


def test_every_public_exception_is_in_the_tree():
    outside = [name for name, cls in _project_exceptions().items()
               if not issubclass(cls, LiveSweError) and cls.__name__ not in BUILTIN_KINDS]
    assert outside == []


def test_each_error_sits_under_the_branch_that_says_who_acts():
    assert all(issubclass(cls, UserError) for cls in (ConfigError, ScaffoldError, SessionError))
    assert all(issubclass(cls, InfrastructureError) for cls in (EnvironmentError_, ModelError, GitFailed))
    assert all(issubclass(cls, ToldToModel) for cls in (FormatError, Refused))
