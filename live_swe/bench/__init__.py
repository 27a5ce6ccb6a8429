"""Benchmarks: suites (SWE-bench Verified / Lite / Pro, local) and the batch runner.

Public surface: :mod:`live_swe.bench.suites` (``load_suite``, ``Instance``, ``Suite``,
``render_first_prompt``) and :mod:`live_swe.bench.batch` (``run_batch``, ``BatchSummary``).
Submodules import their heavy dependencies lazily.
"""
