"""The Gödel engine: measured self-improvement of live-swe scaffolds.

validate (paired comparison on a benchmark), the archive of scaffold variants, parent selection,
diagnosis from failed trajectories, the evolve loop with gates and staged evaluation, lineage plots.
"""
