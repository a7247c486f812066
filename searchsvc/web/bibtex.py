"""BibTeX export of a Record: one `@article` (with a journal reference) or `@misc` entry."""

from __future__ import annotations

import re
import unicodedata

from searchsvc.domain.records import Record, is_arxiv_id

# Characters with a meaning in BibTeX/LaTeX, written so that they print as themselves.
_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_SPECIAL = re.compile("|".join(re.escape(ch) for ch in _ESCAPES))
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9]+")
# Fields whose capitalisation BibTeX styles must not change.
CASE_KEPT = frozenset({"title"})


# Fields that styles and biber pass verbatim to `\url{}` and hyperref: a TeX escape would be
# printed as it stands (`my\_paper`), so they get a URL's own escapes instead.
VERBATIM = frozenset({"url", "doi"})
_URL_UNSAFE = re.compile(r"[\\{}\s]")


def escape(text: str) -> str:
    """Text as TeX prints it: each of TeX's specials written as itself."""
    return _SPECIAL.sub(lambda m: _ESCAPES[m.group(0)], text)


def escape_verbatim(text: str) -> str:
    r"""A URL or DOI as `\url{}` reads it: `\`, braces and spaces percent-encoded (they would end
    the field or begin a command), then every `%` written `\%` (else it begins a TeX comment that
    swallows the rest of the line); nothing else changed."""
    encoded = _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), text)
    return encoded.replace("%", r"\%")


def citation_key(record: Record) -> str:
    """`surnameYEARfirstword`, ASCII only (BibTeX keys cannot hold most punctuation)."""
    surname = record.authors[0].split()[-1] if record.authors else "anon"
    first_word = next((w for w in record.title.split() if len(w) > 3), "paper")
    key = f"{_ascii(surname).lower()}{record.year or ''}{_ascii(first_word).lower()}"
    return key or _ascii(record.id) or "record"


def _ascii(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return _KEY_UNSAFE.sub("", decomposed.encode("ascii", "ignore").decode())


def to_bibtex(record: Record) -> str:
    """The record as one BibTeX entry (UTF-8 text; biber and modern BibTeX read it).

    Every field's value is escaped in the one place the entry is written, by one of two rules:
    text as TeX prints it (`escape`), and the verbatim fields, the URL and the DOI, as `\\url{}`
    reads them (`escape_verbatim`). Either way no value keeps a bare `%` (which begins a TeX
    comment that swallows the rest of the line, closing brace included) or `\\` (which begins a
    command).
    """
    fields: list[tuple[str, str]] = [
        ("title", record.title),
        ("author", " and ".join(record.authors)),
        ("year", str(record.year) if record.year else ""),
    ]
    if record.journal_ref:
        fields.append(("journal", record.journal_ref))
    if is_arxiv_id(record.id):
        fields += [("eprint", record.id), ("archivePrefix", "arXiv")]
        if record.primary_category:
            fields.append(("primaryClass", record.primary_category))
    if record.doi:
        fields.append(("doi", record.doi))
    if record.url:
        fields.append(("url", record.url))
    if record.comments:
        fields.append(("note", record.comments))
    if record.abstract:
        fields.append(("abstract", record.abstract))
    kind = "article" if record.journal_ref else "misc"
    body = ",\n".join(f"  {name} = {{{_value(name, value)}}}" for name, value in fields if value)
    return f"@{kind}{{{citation_key(record)},\n{body}\n}}\n"


def _value(name: str, value: str) -> str:
    if name in VERBATIM:
        return escape_verbatim(value)
    escaped = escape(value)
    # Double braces keep the title's capitalisation (acronyms, names).
    return "{" + escaped + "}" if name in CASE_KEPT else escaped
