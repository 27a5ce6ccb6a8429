"""Behavioural contracts: rules the agent cannot talk or evolve its way out of.

A contract (``model``) is loaded and merged from its sources (``load``), its preconditions checked
before a session exists (``preconditions``), its rules checked over fields the kernel computes itself
(``fields``, ``commands``, ``secrets``, ``diffs``) by the engine before and after each command
(``engine``; changes undone by ``revert``), and reported per session (``report``). ``session`` ties
one run's contract to its log.
"""
