"""Id lists sent to Solr (`compile.id_set`) for ids of any characters the id rule allows: the
`{!terms}` list takes the separator the fewest ids hold, and the ids holding it go beside it as
a quoted clause (issue 33: an id holding every separator raised StopIteration, and the writer
stopped for good). The contract suite (tests/contract/test_writes.py) writes, replaces and
deletes such ids on a cluster; the last test here looks them up as the writer does."""

from __future__ import annotations

import re

import pytest

from searchsvc.backends import open_backend
from searchsvc.backends.solr.compile import _ID_SEPARATORS, NOTHING, id_set
from searchsvc.domain.records import Record, id_problem
from tests.solr.support import drop_collections

EVERY_SEPARATOR = "a,b|c;d\ue000\ue001\ue002e"
TERMS = "{!terms f=id separator=$page_sep v=$page}"


def listed(params: list[tuple[str, str]]) -> list[str]:
    values = dict(params)
    return values["page"].split(values["page_sep"]) if "page" in values else []


def quoted_ids(query: str) -> list[str]:
    """The ids of the query's quoted `id:(...)` clause, unescaped."""
    match = re.search(r"id:\((.*)\)$", query)
    if match is None:
        return []
    found = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))
    return [re.sub(r"\\(.)", r"\1", text) for text in found]


def test_ids_of_no_separator_go_as_one_terms_list():
    query, params = id_set(["a,b", "c|d", "e"], "page")
    assert query == TERMS
    assert listed(params) == ["a,b", "c|d", "e"]
    assert id_set([], "page") == (NOTHING, [])


def test_an_id_holding_every_separator_goes_as_a_quoted_clause_beside_the_list():
    assert id_problem(EVERY_SEPARATOR) is None  # the id rule allows it
    ids = ["plain", EVERY_SEPARATOR, "x,y"]
    query, params = id_set(ids, "page")
    assert query.startswith(f"({TERMS}) OR id:(")
    assert dict(params)["page_sep"] == "|"  # held by one id; "," by two
    assert listed(params) == ["plain", "x,y"]
    assert quoted_ids(query) == [EVERY_SEPARATOR]


def test_the_separator_the_fewest_ids_hold_is_chosen():
    ids = ["a,1", "a,2", "b|1", "c;1", "c;2", "c;3", "d\ue000\ue001\ue002", "e\ue000\ue001\ue002"]
    query, params = id_set(ids, "page")
    assert dict(params)["page_sep"] == "|"
    assert sorted(listed(params) + quoted_ids(query)) == sorted(ids)
    assert quoted_ids(query) == ["b|1"]


def test_ids_that_all_hold_every_separator_go_as_the_quoted_clause_alone():
    ids = [EVERY_SEPARATOR, 'q"uote\\' + EVERY_SEPARATOR, EVERY_SEPARATOR + " (x) OR y*"]
    query, params = id_set(ids, "page")
    assert params == []
    assert query.startswith("id:(")
    assert quoted_ids(query) == ids


def test_every_separator_is_allowed_in_ids():
    for separator in _ID_SEPARATORS:
        assert id_problem(f"x{separator}y") is None


@pytest.mark.slow
def test_ids_holding_every_separator_are_looked_up_written_and_deleted_on_solr(solr_hosts):
    location = f"solr://{solr_hosts}/solr/idlists?replicas=1"
    ids = [EVERY_SEPARATOR, 'q"uote\\' + EVERY_SEPARATOR, "plain", "x,y", "p|q"]
    try:
        with open_backend(location) as backend:
            backend.rebuild([Record(id="plain", title="Plain")])
            written = backend.write(upserts=[Record(id=i, title="Odd") for i in ids])
            assert (written.added, written.replaced) == (4, 1)
            again = backend.write(upserts=[Record(id=i, title="Again") for i in ids[:2]])
            assert (again.added, again.replaced) == (0, 2)
            assert backend.get(EVERY_SEPARATOR).title == "Again"
            assert backend.delete([*ids[:2], "nope"]).deleted == 2
            assert sorted(record.id for record in backend.records()) == sorted(ids[2:])
    finally:
        drop_collections(location)
