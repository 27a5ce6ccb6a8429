"""The exceptions live-swe raises, in one tree (as httpx does):

- ``LiveSweError``: the root. The command line catches it and prints its message as one line.
  - ``UserError``: something the person can fix: bad input, a missing setup step (config, scaffold,
    session, suite, archive, GitHub).
  - ``InfrastructureError``: a part live-swe relies on failed: the environment (Docker engine,
    sandbox, container), the model's provider, git.
  - ``ToldToModel``: the agent's action was refused (no single action in a reply, a gate, a failing
    hook); the message goes back to the model, and the run goes on.

Every message says what went wrong, where, and what to do.
"""


class LiveSweError(Exception):
    """The root of every error live-swe raises on purpose."""


class UserError(LiveSweError):
    """Shown to the user as one line, without a traceback; exit code 2."""


class InfrastructureError(LiveSweError):
    """A part live-swe relies on failed (engine, sandbox, model provider, git)."""


class ToldToModel(LiveSweError):
    """The agent's action was refused; the message is what the model is told."""
