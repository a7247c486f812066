"""Screenshots of the web page for review: search and author pages, desktop and phone width.

    python scripts/screenshots.py [--out screenshots] [--base-url URL] [--index-dir DIR]

Without --base-url it indexes `seeds/` into a temporary directory (or uses --index-dir), serves
`create_app` on a free local port and photographs that. Needs Debian's Chromium (/usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
# Debian's Chromium and the flags it needs here, shared with the browser tests.
sys.path.insert(0, str(ROOT))
from tests.support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}
PAGES = {
    # A query with highlights, two ticked categories (chips) and more than one page of results.
    "search": "/?q=training&category=cs.DC&category=cs.LG",
    "author": "/authors/" + quote("Aditya Akella"),
}


@contextlib.contextmanager
def serve(index_dir: Path) -> Iterator[str]:
    """create_app on the index, served by a werkzeug server thread on a free port."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    from searchsvc.app import create_app

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, *args: object, **kwargs: object) -> None:
            pass

    app = create_app({"INDEX_DIR": str(index_dir)})
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def build_seed_index(index_dir: Path) -> None:
    from searchsvc.indexing.indexer import build_index

    build_index([ROOT / "seeds"], index_dir)


def take(base_url: str, out: Path) -> list[Path]:
    """One full-page PNG per page and viewport; returns their paths."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for device, (width, height) in VIEWPORTS.items():
                context = browser.new_context(
                    viewport={"width": width, "height": height},
                    device_scale_factor=1,
                    is_mobile=device == "phone",
                    has_touch=device == "phone",
                )
                page = context.new_page()
                for name, path in PAGES.items():
                    response = page.goto(base_url + path)
                    if response is None or response.status != 200:
                        status = response.status if response else "no response"
                        raise SystemExit(f"{path}: HTTP {status}")
                    target = out / f"{name}-{device}.png"
                    page.screenshot(path=str(target), full_page=True)
                    written.append(target)
                context.close()
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--base-url", help="photograph a running server instead of starting one")
    parser.add_argument("--index-dir", type=Path, help="serve this index (default: seeds/)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install chromium", file=sys.stderr)
        return 1
    if args.base_url:
        written = take(args.base_url.rstrip("/"), args.out)
    else:
        with tempfile.TemporaryDirectory(prefix="searchsvc-shots-") as scratch:
            index_dir = args.index_dir
            if index_dir is None:
                index_dir = Path(scratch) / "index"
                build_seed_index(index_dir)
            with serve(index_dir) as base_url:
                written = take(base_url, args.out)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
