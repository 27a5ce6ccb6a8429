"""A tree-sitter map of a repository: its most referenced definitions, ranked and fitted to a
token budget, for the agent's first message."""

from live_swe.repomap.mapper import RepoMapper, RepoMapResult, build_repo_map, estimate_tokens

__all__ = ["RepoMapResult", "RepoMapper", "build_repo_map", "estimate_tokens"]
