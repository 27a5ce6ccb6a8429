"""GitHub integration: a small REST client, the issue-to-pull-request flow, and the PR summary."""
