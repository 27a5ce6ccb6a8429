"""The base for errors a person can act on (bad input, missing setup)."""


class UserError(Exception):
    """Shown to the user as one line, without a traceback; exit code 2."""
