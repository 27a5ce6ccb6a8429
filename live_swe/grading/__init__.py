"""Goal–Plan–Action grading of trajectories (Agent GPA): deterministic analysers that find where a
run went wrong, step by step, and optional judges, one per metric, through the model layer.

``live_swe.grading.session.grade_session`` grades a stored session; ``grade`` grades a
:class:`~live_swe.grading.trajectory.Trajectory`, which :mod:`live_swe.grading.log` reads from a
session log."""
