"""A page on another origin uses the API from headless Chromium (issue 35): it searches, and
with a write key in `Authorization` it posts, replaces and deletes a record, through CORS
(flask-cors, configured by SEARCHSVC_CORS_ORIGINS) and the browser's real preflights.

The API is served by a werkzeug thread and by `searchsvc serve` (nginx in front of gunicorn:
its front must let the preflights of the write URLs through); the page by a static file server
on other ports, so other origins. A page whose origin is not configured is refused by the
browser itself.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from searchsvc.app import create_app
from searchsvc.extension import start_writer
from searchsvc.serving.serve import ServeError, find_nginx
from searchsvc.tasks import TaskQueue, queue_path
from searchsvc.tasks.keys import KeyStore
from tests.raw_http import serve as searchsvc_serve
from tests.support import CHROMIUM, CHROMIUM_ARGS, build_index

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is missing (apt-get install chromium) for the browser tests",
    ),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

# The page: its script talks to the API named in its query string (`api`, and the write key
# `key`), shows each answer it reads in #result as JSON and the final search's titles in
# #hits, and says "done" (or "failed: <why>") in #status.
PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>A client of searchsvc on another origin</title></head>
<body>
<p>Status: <output id="status">running</output></p>
<ul id="hits"></ul>
<pre id="result"></pre>
<script>
const params = new URLSearchParams(location.search);
const api = params.get("api");
const auth = {"Authorization": "Bearer " + params.get("key")};
const json = {"Content-Type": "application/json"};
const out = {};

async function search(q) {
  const answer = await fetch(api + "/api/v1/search?q=" + encodeURIComponent(q));
  const body = await answer.json();
  return {status: answer.status, etag: answer.headers.get("ETag"),
          ids: body.hits.map(hit => hit.id), titles: body.hits.map(hit => hit.title)};
}

// Until the search shows what `ok` wants: every worker sees a write within moments.
async function searchUntil(q, ok) {
  for (let tries = 0; ; tries++) {
    const found = await search(q);
    if (ok(found.ids) || tries >= 50) return found;
    await new Promise(resolve => setTimeout(resolve, 200));
  }
}

// A write with the key, then its task (Location) waited for.
async function write(method, path, body) {
  const answer = await fetch(api + path, {
    method, headers: body === undefined ? auth : {...auth, ...json},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const location = answer.headers.get("Location");
  const written = {status: answer.status, location};
  if (location) {
    const task = await fetch(api + location + "?wait=10", {headers: auth});
    written.task = (await task.json()).status;
  }
  return written;
}

async function run() {
  out.search = await search("learning");
  const refused = await fetch(api + "/api/v1/records", {
    method: "POST", headers: json, body: JSON.stringify({id: "cors-1", title: "No key"}),
  });
  out.without_key = {status: refused.status, code: (await refused.json()).error.code,
                     challenge: refused.headers.get("WWW-Authenticate")};
  out.post = await write("POST", "/api/v1/records",
                         {id: "cors-1", title: "Quokka migration across origins"});
  out.posted = await searchUntil("quokka", ids => ids.includes("cors-1"));
  out.put = await write("PUT", "/api/v1/records/cors-1",
                        {title: "Quokka migration replaced by PUT"});
  out.replaced = await searchUntil("replaced", ids => ids.includes("cors-1"));
  out.delete = await write("DELETE", "/api/v1/records/cors-1");
  out.deleted = await searchUntil("quokka", ids => !ids.includes("cors-1"));
  for (const title of out.posted.titles) {
    const item = document.createElement("li");
    item.textContent = title;
    document.getElementById("hits").append(item);
  }
}

run().then(
  () => { document.getElementById("status").textContent = "done"; },
  error => { document.getElementById("status").textContent = "failed: " + error; },
).finally(() => { document.getElementById("result").textContent = JSON.stringify(out); });
</script>
</body>
</html>
"""


def static_site(root: Path) -> Iterator[str]:
    """`root`'s files served on a free port of 127.0.0.1: an origin of its own."""
    handler = functools.partial(QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cors-page")
    (root / "client.html").write_text(PAGE, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def page_origin(site_root) -> Iterator[str]:
    """The origin of the page, the one SEARCHSVC_CORS_ORIGINS names."""
    yield from static_site(site_root)


@pytest.fixture(scope="module")
def other_origin(site_root) -> Iterator[str]:
    """The same page on an origin the setting does not name."""
    yield from static_site(site_root)


def werkzeug_api(index: str, origin: str) -> Iterator[str]:
    """The app in a werkzeug server thread, with its embedded writer as a gunicorn worker has."""
    from werkzeug.serving import make_server

    app = create_app({"INDEX": index, "CORS_ORIGINS": origin})
    start_writer(app)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        writer_thread, stop = app.extensions["searchsvc.writer"]
        stop.set()
        writer_thread.join(timeout=10)


def served_api(index: str, origin: str, root: Path) -> Iterator[str]:
    """`searchsvc serve`: nginx in front of two gunicorn workers (its log in `root`)."""
    try:
        find_nginx()
    except ServeError as exc:
        pytest.skip(f"{exc.message} (.ci/run installs it)")
    (root / "metrics").mkdir()
    env = {"SEARCHSVC_CORS_ORIGINS": origin, "PROMETHEUS_MULTIPROC_DIR": str(root / "metrics")}
    log = root / "serve.log"
    with searchsvc_serve(index, log, workers=2, env=env) as (port, _):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module", params=["werkzeug", "serve"])
def api(request, tmp_path_factory, page_origin) -> Iterator[tuple[str, str]]:
    """(the API's base URL, a write key) over an index of the fixture records."""
    root = tmp_path_factory.mktemp(f"cors-{request.param}")
    index = build_index(root / "index")
    token = KeyStore(TaskQueue(queue_path(index))).create("page", ("write",))[1]
    if request.param == "werkzeug":
        servers = werkzeug_api(index, page_origin)
    else:
        servers = served_api(index, page_origin, root)
    base = next(servers)
    try:
        yield base, token
    finally:
        servers.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    tab = context.new_page()
    yield tab
    context.close()


def run_page(page, origin: str, api: str, token: str) -> tuple[str, dict]:
    page.goto(f"{origin}/client.html?api={api}&key={token}")
    expect(page.locator("#status")).not_to_have_text("running", timeout=60_000)
    status = page.locator("#status").inner_text()
    return status, json.loads(page.locator("#result").inner_text())


def test_a_page_on_a_configured_origin_searches_and_writes_with_a_key(page, api, page_origin):
    base, token = api
    status, out = run_page(page, page_origin, base, token)
    assert status == "done", (status, out)
    # The search, and its ETag readable by the script (exposed).
    assert out["search"]["status"] == 200
    assert len(out["search"]["ids"]) > 0
    assert out["search"]["etag"].startswith('W/"')
    # Without a key: the API's own 401, readable by the page (not a network error).
    assert out["without_key"] == {
        "status": 401,
        "code": "unauthorized",
        "challenge": 'Bearer realm="searchsvc"',
    }
    # POST, PUT and DELETE with the key: accepted, their tasks found through Location.
    for write in ("post", "put", "delete"):
        assert out[write]["status"] == 202, (write, out[write])
        assert out[write]["location"].startswith("/api/v1/tasks/"), (write, out[write])
        assert out[write]["task"] == "succeeded", (write, out[write])
    assert "cors-1" in out["posted"]["ids"]
    assert "cors-1" in out["replaced"]["ids"]
    assert "cors-1" not in out["deleted"]["ids"]
    # What the page shows: the record it wrote, found by its search.
    expect(page.locator("#hits li")).to_contain_text(["Quokka migration across origins"])


def test_a_page_on_another_origin_is_refused_by_the_browser(page, api, other_origin):
    base, token = api
    status, out = run_page(page, other_origin, base, token)
    # The browser gives the script no answer at all: fetch() fails.
    assert status.startswith("failed: TypeError"), (status, out)
    assert out == {}
