"""The kernel's infrastructure: git run with a fixed configuration, session files opened safely,
secrets redacted from everything written or shown. Small modules, no third-party imports."""
