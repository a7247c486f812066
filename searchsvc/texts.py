"""Text normalisation shared by every source: whitespace, TeX to readable Unicode, name folding."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from pylatexenc.latex2text import LatexNodes2Text

_WHITESPACE = re.compile(r"\s+")
# Characters that make a string worth handing to the (slow) TeX converter.
_TEX_MARKERS = re.compile(r"[\\$^_{}~]")
# In LaTeX a bare % starts a comment that swallows the rest of the line; in abstracts it almost
# always means "percent" (e.g. "by 33.5% and"), so it is escaped before conversion.
_BARE_PERCENT = re.compile(r"(?<!\\)%")
# Left over from math such as $99^{th}$ -> "99^th": superscripts/subscripts read as plain text.
_SCRIPT_MARKS = re.compile(r"(?<=\w)[\^_](?=\w)")
_NON_WORD = re.compile(r"[^\w\s]")

_converter = LatexNodes2Text(math_mode="text", strict_latex_spaces=False)


def normalise_space(text: str | None) -> str:
    """Collapse runs of whitespace (line breaks, double spaces, NBSP) to one space and strip."""
    if not text:
        return ""
    return _WHITESPACE.sub(" ", text).strip()


def tex_to_text(text: str | None) -> str:
    """Render TeX markup (`75\\%`, `$11\\times$`, `$99^{th}$`, `Bal\\'azs`) as readable text."""
    text = normalise_space(text)
    if not text or not _TEX_MARKERS.search(text):
        return text
    return _convert(text)


@lru_cache(maxsize=65536)
def _convert(text: str) -> str:
    try:
        converted = _converter.latex_to_text(_BARE_PERCENT.sub(r"\\%", text))
    except Exception:  # pylatexenc raises assorted errors on malformed TeX; keep the raw text
        return text
    converted = _SCRIPT_MARKS.sub("", converted)
    return normalise_space(converted) or text


def fold(text: str) -> str:
    """Case- and accent-insensitive form of a string, for identity keys and lookups."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return normalise_space(stripped.casefold())


def title_key(title: str) -> str:
    """Normalised title used to recognise the same paper met twice: folded, punctuation dropped."""
    return normalise_space(_NON_WORD.sub(" ", fold(title)))
