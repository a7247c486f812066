"""Text normalisation shared by every source: whitespace, TeX to readable Unicode, name folding."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexwalker import get_default_latex_context_db

# Characters that make a string worth handing to the (slow) TeX converter.
_TEX_MARKERS = re.compile(r"[\\$^_{}~]")
# In LaTeX a bare % starts a comment that swallows the rest of the line; in abstracts it almost
# always means "percent" (e.g. "by 33.5% and"), so it is escaped before conversion.
_BARE_PERCENT = re.compile(r"(?<!\\)%")
# Left over from math such as $99^{th}$ -> "99^th": superscripts/subscripts read as plain text.
_SCRIPT_MARKS = re.compile(r"(?<=\w)[\^_](?=\w)")
_NON_WORD = re.compile(r"[^\w\s]")
# Within a text that has TeX, the words pylatexenc would change: markers, and its "specials"
# (dashes, TeX quotes, alignment and parameter characters).
_TEX_WORD = re.compile(r"[\\$^_{}~&#]|--|``|''")
_TRAILING_MACRO = re.compile(r"\\(?:[A-Za-z]+|['`^\"~=.])?$")
# Stands in for an escaped underscore (`snake\\_case`) so _SCRIPT_MARKS leaves it alone.
_UNDERSCORE = "\ue000"
# Escaped special characters that TeX prints as themselves.
_ESCAPED_CHAR = re.compile(r"\\([%&#_$])")
_DASHES = {"--": "\u2013", "---": "\u2014"}
_BEGIN_END = re.compile(r"\\(begin|end)(?![A-Za-z])")

_converter = LatexNodes2Text(math_mode="text", strict_latex_spaces=False)
# Building the default macro database costs more than converting a short span; build it once.
_LATEX_CONTEXT = get_default_latex_context_db()


def normalise_space(text: str | None) -> str:
    """Collapse runs of whitespace (line breaks, double spaces, NBSP) to one space and strip."""
    if not text:
        return ""
    # str.split() splits on exactly the characters `\s` matches, far faster than re.sub.
    return " ".join(text.split())


def tex_to_text(text: str | None) -> str:
    """Render TeX markup (`75\\%`, `$11\\times$`, `$99^{th}$`, `Bal\\'azs`) as readable text."""
    text = normalise_space(text)
    if not text or not _TEX_MARKERS.search(text):
        return text
    # pylatexenc walks its input character by character, in Python; only the spans
    # that hold TeX go through it, the plain words between them are kept as they are.
    converted = normalise_space(
        " ".join(_convert(span) if is_tex else span for is_tex, span in _spans(text))
    )
    # Text that is nothing but markup would vanish; the raw markup beats an empty title.
    return converted or text


def _spans(text: str) -> list[tuple[bool, str]]:
    """`text` cut at spaces into plain and TeX spans (`True`); a TeX span ends only where its
    braces, math and environments are closed, so that it converts the same on its own."""
    spans: list[tuple[bool, str]] = []
    plain: list[str] = []
    tex: list[str] = []
    depth, in_math = 0, False
    for word in text.split(" "):
        if not tex and not _TEX_WORD.search(word):
            plain.append(word)
            continue
        if plain:
            spans.append((False, " ".join(plain)))
            plain = []
        tex.append(word)
        depth, in_math = _groups_after(word, depth, in_math)
        # A word ending in a macro (`\\'`, `\\emph`, a control space) may take the next as argument.
        if depth <= 0 and not in_math and not _TRAILING_MACRO.search(word):
            spans.append((True, " ".join(tex)))
            tex, depth = [], 0
    if tex:
        spans.append((True, " ".join(tex)))
    if plain:
        spans.append((False, " ".join(plain)))
    return spans


def _groups_after(word: str, depth: int, in_math: bool) -> tuple[int, bool]:
    """Open groups after `word`: braces, `\\(`/`\\[` and environments (depth), `$` math (flag)."""
    index, length = 0, len(word)
    while index < length:
        char = word[index]
        if char == "\\":
            following = word[index + 1 : index + 2]
            if following in ("(", "["):
                depth += 1
            elif following in (")", "]"):
                depth -= 1
            elif _BEGIN_END.match(word, index):
                depth += 1 if word[index + 1] == "b" else -1
            index += 2  # an escaped character (`\\$`, `\\{`) opens nothing
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "$":
            in_math = not in_math
            if word.startswith("$$", index):
                index += 1  # display math opens and closes as one unit
        index += 1
    return depth, in_math


@lru_cache(maxsize=65536)
def _convert(text: str) -> str:
    # The commonest spans (`75\\%`, `R\\&D`, a lone `--`) need no parser; same output, far cheaper.
    if not _TEX_WORD.search(_ESCAPED_CHAR.sub("", text)):
        return normalise_space(_ESCAPED_CHAR.sub(r"\1", text))
    if text in _DASHES:
        return _DASHES[text]
    try:
        escaped = _BARE_PERCENT.sub(r"\\%", text).replace("\\_", _UNDERSCORE)
        converted = _converter.latex_to_text(escaped, latex_context=_LATEX_CONTEXT)
    except Exception:  # pylatexenc raises assorted errors on malformed TeX; keep the raw text
        return text
    converted = _SCRIPT_MARKS.sub("", converted).replace(_UNDERSCORE, "_")
    return normalise_space(converted)


def fold(text: str) -> str:
    """Case- and accent-insensitive form of a string, for identity keys and lookups."""
    if text.isascii():
        # ASCII is its own NFKD form, has no combining marks and casefolds as it lowercases:
        # the same result without a Python step per character.
        return normalise_space(text.lower())
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return normalise_space(stripped.casefold())


def title_key(title: str) -> str:
    """Normalised title used to recognise the same paper met twice: folded, punctuation dropped."""
    return normalise_space(_NON_WORD.sub(" ", fold(title)))
