"""SQLite FTS5 (stdlib sqlite3): porter + unicode61 tokenizer, bm25(), facets by GROUP BY.

Facet values live in a side table of (doc, facet, value); the counts of a query are a GROUP BY
over its matches joined to that table. Highlights come from FTS5's highlight() and snippet().
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from benchmarks.engines import Answer, Engine, Task
from searchsvc.domain.records import Record

INDEX_VERSION = 1
DATABASE = "fts5.sqlite3"
_WORD = re.compile(r"\w+")

_TOP_K = "SELECT id FROM docs WHERE docs MATCH ?1 ORDER BY bm25(docs) LIMIT ?2"
_TOP_K_HIGHLIGHTED = (
    "SELECT id, highlight(docs, 1, '<mark>', '</mark>'),"
    " snippet(docs, 2, '<mark>', '</mark>', '…', 40)"
    " FROM docs WHERE docs MATCH ?1 ORDER BY bm25(docs) LIMIT ?2"
)
# One statement: the total (facet '') and the top-k values of every facet, ties by value.
_FACETS = """
WITH m AS MATERIALIZED (SELECT rowid AS doc FROM docs WHERE docs MATCH ?1),
counts AS (
    SELECT f.facet, f.value, count(*) AS n FROM m JOIN facet AS f ON f.doc = m.doc
    GROUP BY f.facet, f.value
)
SELECT '', '', count(*) FROM m
UNION ALL
SELECT facet, value, n FROM (
    SELECT facet, value, n,
           row_number() OVER (PARTITION BY facet ORDER BY n DESC, value) AS r
    FROM counts
) WHERE r <= ?2
"""
_ALL_COUNTS = """
WITH m AS MATERIALIZED (SELECT rowid AS doc FROM docs WHERE docs MATCH ?1)
SELECT '', '', count(*) FROM m
UNION ALL
SELECT f.facet, f.value, count(*) FROM m JOIN facet AS f ON f.doc = m.doc
GROUP BY f.facet, f.value
"""


def match_expression(text: str) -> str:
    """OR of the text's words, each a quoted FTS5 string (so no word is read as syntax)."""
    words = _WORD.findall(text)
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


class Fts5Engine(Engine):
    name = "fts5"
    description = f"SQLite FTS5 {sqlite3.sqlite_version}, OR, bm25, GROUP BY facets"

    @classmethod
    def index_version(cls, **options: object) -> str:
        return f"v{INDEX_VERSION}-sqlite{sqlite3.sqlite_version}"

    def build(self, records: Sequence[Record]) -> None:
        db = sqlite3.connect(self.index_dir / DATABASE)
        db.executescript(
            """
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE VIRTUAL TABLE docs USING fts5(
                id UNINDEXED, title, abstract, authors, tokenize = 'porter unicode61'
            );
            CREATE TABLE facet (doc INTEGER, facet TEXT, value TEXT,
                                PRIMARY KEY (doc, facet, value)) WITHOUT ROWID;
            """
        )
        with db:
            for rowid, record in enumerate(records, start=1):
                db.execute(
                    "INSERT INTO docs (rowid, id, title, abstract, authors) VALUES (?, ?, ?, ?, ?)",
                    (rowid, record.id, record.title, record.abstract, "\n".join(record.authors)),
                )
                values = {("author", a) for a in record.authors}
                values |= {("category", c) for c in record.categories}
                if record.year is not None:
                    values.add(("year", str(record.year)))
                db.executemany(
                    "INSERT INTO facet VALUES (?, ?, ?)", [(rowid, f, v) for f, v in values]
                )
        db.execute("INSERT INTO docs (docs) VALUES ('optimize')")
        db.commit()
        db.close()

    def open(self) -> None:
        self.db = sqlite3.connect(self.index_dir / DATABASE, check_same_thread=False)

    def close(self) -> None:
        self.db.close()

    def search(self, task: Task) -> Answer:
        expression = match_expression(task.query)
        if not expression:
            return Answer(ids=[], total=0 if task.facets else None)
        if task.highlight:
            rows = self.db.execute(_TOP_K_HIGHLIGHTED, (expression, task.limit)).fetchall()
            answer = Answer(
                ids=[row[0] for row in rows],
                highlights=[{"title": row[1], "abstract": row[2]} for row in rows],
            )
        else:
            rows = self.db.execute(_TOP_K, (expression, task.limit)).fetchall()
            answer = Answer(ids=[row[0] for row in rows])
        if task.facets:
            answer.facets = {name: [] for name in task.facets}
            for facet, value, count in self.db.execute(_FACETS, (expression, task.facet_size)):
                if facet == "":
                    answer.total = count
                elif facet in answer.facets:
                    answer.facets[facet].append((value, count))
        return answer

    def exact_counts(self, query: str) -> tuple[int, dict[str, dict[str, int]]]:
        expression = match_expression(query)
        total, counts = 0, {"author": {}, "year": {}, "category": {}}
        if not expression:
            return total, counts
        for facet, value, count in self.db.execute(_ALL_COUNTS, (expression,)):
            if facet == "":
                total = count
            else:
                counts[facet][value] = count
        return total, counts
