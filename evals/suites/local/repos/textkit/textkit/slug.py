"""URL slugs."""

import re
import unicodedata

_NON_WORD = re.compile(r"[^a-z0-9]")


def slugify(text: str, separator: str = "-") -> str:
    """Turn ``text`` into a lowercase ASCII slug.

    Accents are folded to their base letter and anything that is not a letter or a
    digit becomes ``separator``.
    """
    normalized = unicodedata.normalize("NFKD", text)
    ascii_text = normalized.encode("ascii", "ignore").decode("ascii").lower()
    slug = _NON_WORD.sub(separator, ascii_text)
    return slug.strip(separator)
