"""Seed hooks: all no-ops.

Hooks run in an isolated worker process (no API keys, resource limits, a timeout per call), never
in the kernel. Only the standard library may be imported. Each hook takes JSON-able data and
returns JSON-able data of the same shape; a hook that raises, hangs or returns garbage makes the
kernel fall back to the last good scaffold.
"""


def transform_observation(observation: str, step: int) -> str:
    """Return the observation text the model will see."""
    return observation


def transform_messages(messages: list, step: int) -> list:
    """Return the message list sent to the model (e.g. compact old observations)."""
    return messages


def after_step(step: int, command: str, returncode: int) -> str:
    """Return a note to add after the step, or an empty string for none."""
    return ""
