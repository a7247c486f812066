"""The write API through the real Flask app: keys and scopes, validation, limits, tasks, and the
records searchable once the writer (run here in the test's thread) has applied them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

import orjson
import pytest

from searchsvc.app import create_app
from searchsvc.backends import open_backend
from searchsvc.domain.records import Record
from searchsvc.extension import get_queue, get_service
from searchsvc.tasks import TaskQueue, TaskWriter, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.support import FIXTURE_RECORDS, build_index

NDJSON = "application/x-ndjson"


@pytest.fixture
def index(tmp_path) -> str:
    return build_index(tmp_path / "index")


@pytest.fixture
def write_app(index):
    return create_app({"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": ""})


@pytest.fixture
def api(write_app):
    return write_app.test_client()


@pytest.fixture
def keys(index) -> KeyStore:
    return KeyStore(TaskQueue(queue_path(index)))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def writer_key(keys) -> dict[str, str]:
    return bearer(keys.create("tests", ("write",))[1])


def apply_queued(write_app) -> None:
    """Be the writer for a moment: apply every queued task."""
    with write_app.app_context():
        queue = get_queue()
    with open_backend(write_app.config["INDEX"]) as backend:
        TaskWriter(queue, backend).run_pending()
    # What the embedded writer does for its worker (extension.start_writer): reads see it now.
    with write_app.app_context():
        get_service().backend.refresh()


def record(record_id: str, title: str, **fields) -> dict:
    return {"id": record_id, "title": title, **fields}


def search_ids(api, q: str) -> list[str]:
    response = api.get("/api/v1/search", query_string={"q": q})
    assert response.status_code == 200
    return [hit["id"] for hit in response.get_json()["hits"]]


# -- keys ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/records"),
        ("put", "/api/v1/records/x"),
        ("delete", "/api/v1/records/x"),
        ("post", "/api/v1/records/delete"),
        ("get", "/api/v1/tasks/1"),
        ("get", "/api/v1/tasks"),
    ],
)
def test_every_write_and_task_read_needs_a_key(api, method, path):
    response = getattr(api, method)(path, json=record("x", "T"))
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.get_json()["error"]["code"] == "unauthorized"


def test_a_wrong_or_revoked_key_is_401_and_a_key_without_the_scope_403(api, keys):
    key, token = keys.create("app", ("write",))
    reader = keys.create("reader", ("read",))[1]
    assert (
        api.post("/api/v1/records", json=record("x", "T"), headers=bearer(token + "x")).status_code
        == 401
    )
    assert (
        api.post("/api/v1/records", json=record("x", "T"), headers=bearer("nonsense")).status_code
        == 401
    )
    refused = api.post("/api/v1/records", json=record("x", "T"), headers=bearer(reader))
    assert refused.status_code == 403
    assert refused.get_json()["error"]["code"] == "forbidden"
    assert (
        api.post("/api/v1/records", json=record("x", "T"), headers=bearer(token)).status_code == 202
    )
    keys.revoke(key.id)
    assert (
        api.post("/api/v1/records", json=record("x", "T"), headers=bearer(token)).status_code == 401
    )


def test_keys_are_stored_only_as_digests(keys, index):
    key, token = keys.create("app", ("admin",))
    secret = token.removeprefix(f"ssk_{key.id}_")  # the secret may hold "_" itself
    assert len(secret) == 43
    database = queue_path(index)
    for stored in (database, database.with_name(database.name + "-wal")):
        assert secret.encode() not in stored.read_bytes()
    assert keys.authenticate(token).allows("write")


def test_reads_are_open_unless_the_setting_asks_for_a_read_key(index, keys):
    closed = create_app({"INDEX": index, "TESTING": True, "REQUIRE_KEY_FOR_READS": True})
    client = closed.test_client()
    response = client.get("/api/v1/search?q=learning")
    assert response.status_code == 401
    assert "WWW-Authenticate" in response.headers
    writer = keys.create("writer", ("write",))[1]
    assert client.get("/api/v1/search?q=learning", headers=bearer(writer)).status_code == 403
    reader = keys.create("reader", ("read",))[1]
    assert client.get("/api/v1/search?q=learning", headers=bearer(reader)).status_code == 200
    assert client.get("/healthz").status_code == 200


# -- writes -------------------------------------------------------------------------------------
def test_a_record_posted_is_accepted_as_a_task_and_searchable_once_applied(
    api, write_app, writer_key
):
    response = api.post(
        "/api/v1/records", json=record("api-1", "Quokka migration patterns"), headers=writer_key
    )
    assert response.status_code == 202
    task = response.get_json()
    assert (task["status"], task["kind"], task["size"]) == ("enqueued", "upsert", 1)
    assert response.headers["Location"].endswith(f"/api/v1/tasks/{task['id']}")
    assert search_ids(api, "quokka") == []
    apply_queued(write_app)
    done = api.get(f"/api/v1/tasks/{task['id']}", headers=writer_key).get_json()
    assert done["status"] == "succeeded"
    assert done["result"]["batch"]["added"] == 1
    assert search_ids(api, "quokka") == ["api-1"]
    assert api.get("/api/v1/records/api-1").get_json()["title"] == "Quokka migration patterns"


def test_an_array_and_ndjson_are_upserted_by_id(api, write_app, writer_key):
    existing = FIXTURE_RECORDS[0].id
    array = [record(existing, "Replaced wombat title"), record("new-1", "Wombat burrows")]
    assert api.post("/api/v1/records", json=array, headers=writer_key).status_code == 202
    lines = "\n".join(json.dumps(record(f"nd-{n}", f"Platypus note {n}")) for n in range(3))
    response = api.post(
        "/api/v1/records", data=lines + "\n\n", content_type=NDJSON, headers=writer_key
    )
    assert (response.status_code, response.get_json()["size"]) == (202, 3)
    apply_queued(write_app)
    assert sorted(search_ids(api, "wombat")) == sorted([existing, "new-1"])
    assert len(search_ids(api, "platypus")) == 3
    assert api.get(f"/api/v1/records/{existing}").get_json()["title"] == "Replaced wombat title"


def test_put_takes_the_id_from_the_path_and_refuses_another(api, write_app, writer_key):
    ok = api.put(
        "/api/v1/records/hep-th/9901001", json={"title": "Old style id"}, headers=writer_key
    )
    assert ok.status_code == 202
    clash = api.put("/api/v1/records/a", json=record("b", "T"), headers=writer_key)
    assert clash.status_code == 400
    assert clash.get_json()["error"]["details"]["errors"][0]["field"] == "id"
    apply_queued(write_app)
    assert api.get("/api/v1/records/hep-th/9901001").status_code == 200


def test_delete_one_and_many(api, write_app, writer_key):
    ids = [r.id for r in FIXTURE_RECORDS[:3]]
    assert api.delete(f"/api/v1/records/{ids[0]}", headers=writer_key).status_code == 202
    many = api.post(
        "/api/v1/records/delete", json={"ids": [*ids[1:], "never-there"]}, headers=writer_key
    )
    assert (many.status_code, many.get_json()["kind"]) == (202, "delete")
    apply_queued(write_app)
    for record_id in ids:
        assert api.get(f"/api/v1/records/{record_id}").status_code == 404
    task = api.get(f"/api/v1/tasks/{many.get_json()['id']}", headers=writer_key).get_json()
    assert task["status"] == "succeeded"


def test_an_export_posts_back_as_it_is(api, write_app, writer_key, index, runner, tmp_path):
    exported = tmp_path / "export.jsonl"
    assert runner("export", "--index", index, "--output", exported).exit_code == 0
    other = build_index(tmp_path / "other", [Record(id="only", title="Only record")])
    other_app = create_app({"INDEX": other, "TESTING": True})
    key = bearer(KeyStore(TaskQueue(queue_path(other))).create("t", ("write",))[1])
    response = other_app.test_client().post(
        "/api/v1/records", data=exported.read_bytes(), content_type=NDJSON, headers=key
    )
    assert response.status_code == 202
    apply_queued(other_app)
    with open_backend(other) as backend, open_backend(index) as original:
        assert {r.id: r for r in original.records()}.items() <= {
            r.id: r for r in backend.records()
        }.items()


# -- validation and limits ------------------------------------------------------------------------
def test_a_batch_with_bad_records_is_refused_whole_with_each_position(api, writer_key, index):
    batch = [
        record("ok", "Fine"),
        {"id": "no-title"},
        record("bad-year", "T", year="2020"),
        record("line\nbreak", "T"),
        record("extra", "T", colour="red"),
        "not an object",
    ]
    response = api.post("/api/v1/records", json=batch, headers=writer_key)
    assert response.status_code == 400
    error = response.get_json()["error"]
    problems = {(e["position"], e["field"]) for e in error["details"]["errors"]}
    assert problems == {(1, "title"), (2, "year"), (3, "id"), (4, "colour"), (5, "_record")}
    assert error["message"].startswith("record 1: title:")
    assert "nothing was queued" in error["message"]
    assert TaskQueue(queue_path(index)).counts()["enqueued"] == 0


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "invalid_parameter"),
        (b"[]", "application/json", 400, "invalid_parameter"),
        (b'{"id": "a", "title": "t"}\n{oops\n', NDJSON, 400, "invalid_parameter"),
        (b"id,title\na,t", "text/csv", 415, "unsupported_media_type"),
        (b"", "application/json", 400, "invalid_parameter"),
    ],
)
def test_malformed_bodies_get_clear_errors(api, writer_key, body, content_type, status, code):
    response = api.post("/api/v1/records", data=body, content_type=content_type, headers=writer_key)
    assert response.status_code == status
    assert response.get_json()["error"]["code"] == code


def test_too_many_records_or_too_big_a_body_is_413(index, keys):
    app = create_app(
        {
            "INDEX": index,
            "TESTING": True,
            "MAX_BATCH_RECORDS": 3,
            "MAX_WRITE_CONTENT_LENGTH": 2000,
        }
    )
    client = app.test_client()
    key = bearer(keys.create("t", ("write",))[1])
    many = client.post("/api/v1/records", json=[record(str(n), "T") for n in range(4)], headers=key)
    assert many.status_code == 413
    assert many.get_json()["error"]["code"] == "payload_too_large"
    big = client.post(
        "/api/v1/records", json=record("x", "T" * 1900, abstract="a" * 500), headers=key
    )
    assert big.status_code == 413
    too_many_ids = client.post("/api/v1/records/delete", json={"ids": list("abcd")}, headers=key)
    assert too_many_ids.status_code == 413


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", "t" * 2001),
        ("authors", ["A"] * 5001),
        ("authors", ["a" * 1001]),
        ("categories", ["c"] * 101),
        ("id", "i" * 513),
        ("year", 3000),
        ("abstract", "a" * 100_001),
    ],
)
def test_field_limits_are_400_naming_the_field(index, keys, field, value):
    app = create_app({"INDEX": index, "TESTING": True, "MAX_WRITE_CONTENT_LENGTH": 10**7})
    key = bearer(keys.create("t", ("write",))[1])
    response = app.test_client().post(
        "/api/v1/records", json={**record("x", "T"), field: value}, headers=key
    )
    assert response.status_code == 400
    assert response.get_json()["error"]["details"]["errors"][0]["field"] == field


@pytest.mark.parametrize(
    ("record_id", "reason"),
    [
        ("a\nb", "record id 'a\\nb' has U+000A (line feed) at character 2: ids must be printable"),
        ("a\rb", "has U+000D (carriage return) at character 2"),
        ("a\x00b", "has U+0000 (NUL) at character 2"),
        ("a\tb", "has U+0009 (tab) at character 2"),
        ("a\x7fb", "has U+007F at character 2"),
        ("a\u2028b", "has U+2028 at character 2"),
        ("a\u200bb", "has U+200B at character 2"),
        (" a", "starts or ends with a space"),
        ("", "must be a non-empty string"),
        ("i" * 513, "is 513 characters long: at most 512 are allowed"),
    ],
)
def test_an_id_breaking_the_id_rule_is_a_400_naming_the_field(api, writer_key, record_id, reason):
    response = api.post("/api/v1/records", json=[record(record_id, "T")], headers=writer_key)
    assert response.status_code == 400
    [error] = response.get_json()["error"]["details"]["errors"]
    assert (error["position"], error["field"]) == (0, "id")
    assert reason in error["reason"]


def test_a_path_id_breaking_the_id_rule_is_a_400_and_the_id_rule_allows_slashes(
    api, write_app, writer_key
):
    # (A path with a line break matches no route: 404 before any view.)
    refused = api.put("/api/v1/records/a%09b", json={"title": "T"}, headers=writer_key)
    assert refused.status_code == 400
    [error] = refused.get_json()["error"]["details"]["errors"]
    assert error["field"] == "id" and "U+0009 (tab)" in error["reason"]
    longest = "hep-th/" + "9" * 505
    for record_id in ("hep-th/9901001", "doi:10.1000/xyz", longest):
        accepted = api.post("/api/v1/records", json=record(record_id, "T"), headers=writer_key)
        assert accepted.status_code == 202, accepted.get_json()
    apply_queued(write_app)
    for record_id in ("hep-th/9901001", "doi:10.1000/xyz", longest):
        assert api.get(f"/api/v1/records/{record_id}").get_json()["id"] == record_id


def test_writes_are_rate_limited_per_key_across_endpoints(index, keys):
    app = create_app({"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": "2/year"})
    client = app.test_client()
    first, second = (bearer(keys.create(n, ("write",))[1]) for n in ("one", "two"))
    statuses = [
        client.delete("/api/v1/records/x", headers=first).status_code,
        client.post("/api/v1/records", json=record("y", "T"), headers=first).status_code,
        client.delete("/api/v1/records/x", headers=first).status_code,
    ]
    assert statuses == [202, 202, 429]  # one budget for every write endpoint
    limited = client.delete("/api/v1/records/x", headers=first)
    assert limited.get_json()["error"]["status"] == 429
    assert client.delete("/api/v1/records/x", headers=second).status_code == 202


def test_an_unwritable_queue_is_a_503_and_reads_keep_answering(tmp_path, index, keys):
    key = bearer(keys.create("t", ("write",))[1])
    blocked = tmp_path / "a-directory"
    blocked.mkdir()
    app = create_app({"INDEX": index, "TESTING": True, "TASKS_DB": str(blocked)})
    client = app.test_client()
    # SQLite cannot open a directory as its file: as unusable as a broken disk.
    response = client.post("/api/v1/records", json=record("x", "T"), headers=key)
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "task_queue_unavailable"
    assert client.get("/api/v1/search?q=learning").status_code == 200


# -- tasks --------------------------------------------------------------------------------------
def test_tasks_are_listed_newest_first_by_status_and_paged(api, write_app, writer_key):
    ids = [
        api.delete(f"/api/v1/records/x{n}", headers=writer_key).get_json()["id"] for n in range(3)
    ]
    listing = api.get("/api/v1/tasks?status=enqueued&limit=2", headers=writer_key).get_json()
    assert [t["id"] for t in listing["tasks"]] == ids[:0:-1]
    rest = api.get(
        f"/api/v1/tasks?status=enqueued&before={listing['next_before']}", headers=writer_key
    ).get_json()
    assert ([t["id"] for t in rest["tasks"]], rest["next_before"]) == ([ids[0]], None)
    apply_queued(write_app)
    succeeded = api.get("/api/v1/tasks?status=succeeded", headers=writer_key).get_json()
    assert len(succeeded["tasks"]) == 3


@pytest.mark.parametrize("query", ["wait=10.5", "wait=-1", "wait=soon"])
def test_task_wait_is_bounded(api, writer_key, query):
    task_id = api.delete("/api/v1/records/x", headers=writer_key).get_json()["id"]
    assert api.get(f"/api/v1/tasks/{task_id}?{query}", headers=writer_key).status_code == 400


def test_waiting_for_a_task_returns_it_as_it_is_when_time_is_up(api, writer_key):
    task_id = api.delete("/api/v1/records/x", headers=writer_key).get_json()["id"]
    response = api.get(f"/api/v1/tasks/{task_id}?wait=0.2", headers=writer_key)
    assert (response.status_code, response.get_json()["status"]) == (200, "enqueued")


def test_an_unknown_task_is_404(api, writer_key):
    response = api.get("/api/v1/tasks/999", headers=writer_key)
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "task_not_found"
    assert api.get("/api/v1/tasks?status=lost", headers=writer_key).status_code == 400


def test_metrics_count_the_tasks_by_status(api, write_app, writer_key):
    api.delete("/api/v1/records/x", headers=writer_key)
    assert 'searchsvc_tasks{status="enqueued"} 1.0' in api.get("/metrics").get_data(as_text=True)
    apply_queued(write_app)
    text = api.get("/metrics").get_data(as_text=True)
    assert 'searchsvc_tasks{status="enqueued"} 0.0' in text
    assert 'searchsvc_tasks{status="succeeded"} 1.0' in text


def test_reads_never_create_the_queue_file(index, api):
    assert api.get("/metrics").status_code == 200
    assert api.get("/api/v1/tasks/1", headers=bearer("ssk_x")).status_code == 401
    assert not queue_path(index).exists()


# -- issue 33: tasks per key, the shared rate limit, the queue's bounds, bounded waits ------------
def test_a_write_key_sees_only_its_own_tasks_and_an_admin_key_sees_all(
    api, keys, writer_key, index
):
    other = bearer(keys.create("other", ("write",))[1])
    admin = bearer(keys.create("admin", ("admin",))[1])
    mine = api.delete("/api/v1/records/x", headers=writer_key).get_json()
    theirs = api.delete("/api/v1/records/y", headers=other).get_json()["id"]
    operator = TaskQueue(queue_path(index)).enqueue_deletes(["z"], origin="cli").id

    def listed(headers) -> list[int]:
        response = api.get("/api/v1/tasks", headers=headers)
        assert response.status_code == 200
        return [t["id"] for t in response.get_json()["tasks"]]

    assert listed(writer_key) == [mine["id"]]
    assert listed(other) == [theirs]
    assert listed(admin) == [operator, theirs, mine["id"]]
    # Another key's task is not found, as one that does not exist: its existence is not told.
    for path in (f"/api/v1/tasks/{theirs}", f"/api/v1/tasks/{theirs}?wait=0.1"):
        hidden = api.get(path, headers=writer_key)
        assert hidden.status_code == 404
        assert hidden.get_json()["error"]["code"] == "task_not_found"
    seen = api.get(f"/api/v1/tasks/{theirs}", headers=admin).get_json()
    assert seen["key_id"] == keys.authenticate(other["Authorization"][7:]).id
    assert mine["key_id"] is not None


def test_the_write_rate_limit_is_shared_by_every_worker(index, keys):
    # A worker is a process: the other one here is a fresh interpreter with its own app. The
    # windows are fixed (a minute's restarts on the minute), so the tests of the rate count in
    # windows of a year ("2/year"): a run that crossed a minute's end saw a new budget.
    token = keys.create("one", ("write",))[1]
    settings = {"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": "2/year"}
    client = create_app(settings).test_client()
    for n in range(2):
        assert client.delete(f"/api/v1/records/x{n}", headers=bearer(token)).status_code == 202
    script = textwrap.dedent(
        """
        import sys
        from searchsvc.app import create_app
        app = create_app({"INDEX": sys.argv[1], "TESTING": True, "WRITE_RATE_LIMIT": "2/year"})
        response = app.test_client().delete(
            "/api/v1/records/x", headers={"Authorization": "Bearer " + sys.argv[2]}
        )
        print(response.status_code, response.headers.get("Retry-After"))
        print(response.get_json()["error"]["code"])
        """
    )
    other_worker = subprocess.run(
        [sys.executable, "-c", script, index, token], capture_output=True, text=True
    )
    assert other_worker.returncode == 0, (other_worker.stdout, other_worker.stderr)
    status, retry_after, code = other_worker.stdout.split()
    assert (status, code) == ("429", "too_many_requests")
    assert 0 < int(retry_after) <= 360 * 86400
    assert TaskQueue(queue_path(index)).counts()["enqueued"] == 2


def test_a_full_backlog_is_429_for_its_key_and_503_for_the_queue_with_retry_after(index, keys):
    # A write into an empty backlog is always taken; the next one would exceed the bound.
    body = record("x", "T", abstract="words " * 10)
    size = len(orjson.dumps([Record.from_dict(body).to_dict()]))  # as the queue keeps it
    app = create_app(
        {
            "INDEX": index,
            "TESTING": True,
            "WRITE_RATE_LIMIT": "",
            "QUEUE_MAX_BYTES_PER_KEY": size + size // 2,
            "QUEUE_MAX_BYTES": size * 2 + size // 2,
        }
    )
    client = app.test_client()
    first, second, third = (bearer(keys.create(n, ("write",))[1]) for n in ("a", "b", "c"))
    assert client.post("/api/v1/records", json=body, headers=first).status_code == 202
    per_key = client.post("/api/v1/records", json=body, headers=first)
    assert per_key.status_code == 429
    assert per_key.get_json()["error"]["code"] == "key_queue_full"
    assert int(per_key.headers["Retry-After"]) > 0
    assert per_key.get_json()["error"]["details"]["retry_after"] == int(
        per_key.headers["Retry-After"]
    )
    assert client.post("/api/v1/records", json=body, headers=second).status_code == 202
    total = client.post("/api/v1/records", json=body, headers=third)
    assert total.status_code == 503
    assert total.get_json()["error"]["code"] == "queue_full"
    assert int(total.headers["Retry-After"]) > 0
    apply_queued(app)
    assert client.post("/api/v1/records", json=body, headers=third).status_code == 202


def test_writes_below_the_free_disk_floor_are_507_with_retry_after(index, keys):
    app = create_app(
        {"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": "", "MIN_FREE_DISK_BYTES": 2**60}
    )
    key = bearer(keys.create("t", ("write",))[1])
    refused = app.test_client().post("/api/v1/records", json=record("x", "T"), headers=key)
    assert refused.status_code == 507
    assert refused.get_json()["error"]["code"] == "insufficient_storage"
    assert int(refused.headers["Retry-After"]) > 0
    assert TaskQueue(queue_path(index)).counts()["enqueued"] == 0


def test_waits_are_bounded_per_key_across_workers(index, keys):
    # Two apps over one queue stand for two workers; one wait per key at a time.
    settings = {"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": "", "MAX_WAITS_PER_KEY": 1}
    workers = [create_app(settings).test_client() for _ in range(2)]
    key, other = (bearer(keys.create(n, ("write",))[1]) for n in ("a", "b"))
    task_id = workers[0].delete("/api/v1/records/x", headers=key).get_json()["id"]
    other_task = workers[0].delete("/api/v1/records/y", headers=other).get_json()["id"]
    path = f"/api/v1/tasks/{task_id}?wait=3"
    holding = threading.Thread(target=lambda: workers[0].get(path, headers=key))
    holding.start()
    try:
        time.sleep(0.5)  # the first wait holds the key's one slot
        started = time.monotonic()
        refused = workers[1].get(path, headers=key)
        assert time.monotonic() - started < 1.0
        assert (refused.status_code, refused.get_json()["status"]) == (200, "enqueued")
        assert refused.headers["Searchsvc-Wait"] == "refused"
        assert int(refused.headers["Retry-After"]) > 0
        # Another key still waits.
        started = time.monotonic()
        waited = workers[1].get(f"/api/v1/tasks/{other_task}?wait=0.5", headers=other)
        assert time.monotonic() - started >= 0.5
        assert "Searchsvc-Wait" not in waited.headers
    finally:
        holding.join()
    started = time.monotonic()
    workers[1].get(f"/api/v1/tasks/{task_id}?wait=0.5", headers=key)
    assert time.monotonic() - started >= 0.5


def test_metrics_show_the_backlog_and_the_failed_tasks(api, write_app, writer_key, index):
    api.delete("/api/v1/records/x", headers=writer_key)
    text = api.get("/metrics").get_data(as_text=True)
    assert "searchsvc_task_backlog_bytes 5.0" in text  # the payload ["x"]
    queue = TaskQueue(queue_path(index))
    bad = queue.enqueue_upserts([Record(id="bad", title="T")])
    with queue.transaction() as connection:
        connection.execute("UPDATE tasks SET payload = ? WHERE id = ?", (b'[{"id": 1}]', bad.id))
    apply_queued(write_app)
    text = api.get("/metrics").get_data(as_text=True)
    assert "searchsvc_task_backlog_bytes 0.0" in text
    assert 'searchsvc_tasks{status="failed"} 1.0' in text


def test_writes_document_their_bounds(api):
    spec = api.get("/api/v1/openapi.json").get_json()
    for path, method in (("/api/v1/records", "post"), ("/api/v1/records/{record_id}", "delete")):
        assert {"429", "503", "507"} <= set(spec["paths"][path][method]["responses"])
