"""Export: `records()` gives back every record exactly as it was indexed, once each."""

from __future__ import annotations

import json
from dataclasses import replace

from searchsvc.domain.records import Record
from tests.support import FIXTURE_RECORDS


def by_id(records):
    return sorted(records, key=lambda record: record.id)


def test_records_yields_every_fixture_record_as_indexed(fixture_backend):
    assert by_id(fixture_backend.records()) == by_id(FIXTURE_RECORDS)


def test_records_yields_every_seed_record_once(seed_backend, seed_records):
    exported = list(seed_backend.records())
    assert len(exported) == len({record.id for record in exported}) == 33
    assert by_id(exported) == by_id(seed_records)


def test_an_export_round_trips_through_json(fixture_backend):
    lines = [json.dumps(record.to_dict()) for record in fixture_backend.records()]
    assert by_id(Record.from_dict(json.loads(line)) for line in lines) == by_id(FIXTURE_RECORDS)


def test_every_record_field_survives_the_index(empty_backend):
    full = Record(
        id="full-1",
        title="Every Field Filled",
        abstract="An abstract\nover two lines with $x^2$ and <tags>.",
        authors=("Ève Dupont", "O'Neil", "李 雷"),
        year=1999,
        categories=("math.CO", "cs.DM"),
        source="Example",
        url="https://example.org/full-1",
        doi="10.1000/xyz123",
        journal_ref="J. Ex. 1 (1999) 1-2",
        comments="12 pages",
    )
    bare = Record(id="bare-1", title="Only A Title")
    empty_backend.rebuild([full, bare])
    assert by_id(empty_backend.records()) == [bare, full]
    assert empty_backend.get("full-1") == full and empty_backend.get("bare-1") == bare


def test_an_export_after_updates_holds_each_id_once_with_its_latest_version(empty_backend):
    empty_backend.rebuild(FIXTURE_RECORDS)
    renamed = replace(FIXTURE_RECORDS[1], title="Renamed Once")
    empty_backend.upsert([renamed])
    empty_backend.upsert([replace(renamed, title="Renamed Twice")])
    empty_backend.delete([FIXTURE_RECORDS[4].id])
    exported = by_id(empty_backend.records())
    expected = [
        replace(renamed, title="Renamed Twice"),
        *FIXTURE_RECORDS[:1],
        *FIXTURE_RECORDS[2:4],
    ]
    assert exported == by_id(expected)
