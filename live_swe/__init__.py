"""live-swe: a software-engineering agent that evolves itself while it works."""

__version__ = "0.1.0"
