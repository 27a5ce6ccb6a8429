"""Hooks that provably change nothing are skipped (no worker round trip); all others run."""

from live_swe.evolution.hook_checks import passthrough_hooks
from live_swe.resources import resource_path


def test_seed_hooks_are_all_passthrough():
    source = resource_path("scaffold", "hooks.py").read_text()
    assert passthrough_hooks(source) == {"transform_observation", "transform_messages", "after_step"}


def test_hooks_that_change_anything_are_not_skipped():
    cases = [
        "def transform_observation(o, s):\n    return o.upper()\n",
        "def transform_observation(o, s):\n    return s\n",
        "def after_step(step, command, rc):\n    return 'note'\n",
        # rebound after the definition
        "def transform_observation(o, s):\n    return o\ntransform_observation = lambda o, s: o + '!'\n",
        # decorated: the decorator may wrap it in anything
        "import functools\n@functools.lru_cache\ndef transform_messages(m, s):\n    return m\n",
        # two statements in the body
        "def transform_messages(m, s):\n    m.append({'role': 'user', 'content': 'x'})\n    return m\n",
        "def transform_messages(m, s):\n    return m\ndef transform_messages(m, s):\n    return []\n",
        "this is not python",
    ]
    for source in cases:
        assert passthrough_hooks(source) == frozenset(), source


def test_docstring_and_none_forms_are_recognised():
    source = (
        'def transform_observation(observation, step):\n    """Keep it."""\n    return observation\n'
        "def after_step(step, command, returncode):\n    return None\n"
    )
    assert passthrough_hooks(source) == {"transform_observation", "after_step"}
