"""Text normalisation: whitespace, TeX rendering (and its fast path), folding, title keys."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from searchsvc.domain.texts import fold, normalise_space, tex_to_text, title_key


def test_normalise_space_collapses_every_kind_of_whitespace():
    assert normalise_space("  a\u00a0 b\n\tc\r\n ") == "a b c"
    assert normalise_space(None) == normalise_space("") == ""


@pytest.mark.parametrize(
    ("tex", "text"),
    [
        ("around 75\\% of the time", "around 75% of the time"),
        ("$11\\times$ faster", "11× faster"),
        ("the $99^{th}$ percentile", "the 99th percentile"),
        ("C. Bal\\'azs", "C. Balázs"),
        ("Fr\\'{e}chet distance", "Fréchet distance"),
        ("we call it \\emph{two words} here", "we call it two words here"),
        ("R\\&D and snake\\_case", "R&D and snake_case"),
        ("snake\\_case next to $x_1$", "snake_case next to x1"),
        ("by 33.5% and \\textbf{more}", "by 33.5% and more"),
        ("a $x + y$ b", "a x + y b"),
        ("Title\n  over two lines", "Title over two lines"),
        ("types -- such as \\emph{debate}", "types – such as debate"),
        ("generation~(RAG)", "generation (RAG)"),
    ],
)
def test_tex_is_rendered_as_readable_text(tex, text):
    assert tex_to_text(tex) == text


@pytest.mark.parametrize("text", ["plain words -- left alone", "a ``quote''", "R&D"])
def test_text_without_tex_markers_is_only_space_normalised(text):
    assert tex_to_text(text) == text


def test_markup_only_text_keeps_its_raw_form_rather_than_vanishing():
    assert tex_to_text("$\\unknownmacro$") == "$\\unknownmacro$"


@pytest.mark.parametrize("broken", ["{", "$", "\\", "a { b", "$x", "\\begin{itemize} a", "}}}"])
def test_malformed_tex_never_raises(broken):
    assert isinstance(tex_to_text(broken), str)


@given(st.text(max_size=60))
def test_tex_to_text_is_total_and_single_spaced(text):
    result = tex_to_text(text)
    assert result == normalise_space(result)


def test_fold_and_title_key_ignore_case_accents_and_punctuation():
    assert fold("Balázs ÉCOLE") == "balazs ecole"
    assert title_key("Shockwave: Fair,  and Efficient!") == "shockwave fair and efficient"
    assert title_key("Café") == title_key("cafe")


def _fold_by_characters(text: str) -> str:
    # fold() without its ASCII shortcut: decompose, drop combining marks, casefold.
    decomposed = unicodedata.normalize("NFKD", text)
    return normalise_space(
        "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
    )


@given(st.text(st.characters(max_codepoint=127)) | st.text())
def test_fold_of_ascii_takes_a_shortcut_to_the_same_result(text):
    assert fold(text) == _fold_by_characters(text)
