"""Shorten text for display."""

ELLIPSIS = "..."


def truncate(text: str, width: int, ellipsis: str = ELLIPSIS) -> str:
    """Return ``text`` shortened to at most ``width`` characters.

    When the text is cut, ``ellipsis`` marks the cut and counts toward ``width``.
    """
    if width < 0:
        raise ValueError("width must be >= 0")
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return ellipsis[:width]
    return text[: width - len(ellipsis)] + ellipsis
