"""The interactive terminal UI (Textual): ``live-swe tui``."""
