"""Raw HTTP over a socket, for requests no HTTP library sends (a 16 MB request line, bytes no
HTTP allows, a negative Content-Length), and `searchsvc serve` started on a free port.

Used by tests/serving/test_front.py, tests/serving/test_gunicorn.py and benchmarks/bench_attack.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import stop_process

ROOT = Path(__file__).resolve().parent.parent
SEARCHSVC = Path(sys.executable).with_name("searchsvc")
# A request line of 16 MB: what made gunicorn alone spend its whole worker timeout parsing.
HUGE_LINE_BYTES = 16 * 1024 * 1024
CHUNK = 64 * 1024


@dataclass
class RawAnswer:
    """What came back on one connection: the answer (if any) and how the connection ended."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    # "closed" (the server closed it), "reset", "timeout" (still open when we gave up), or
    # "open" (the whole answer came and we did not wait for the close: `ask`).
    ending: str = "closed"

    def json(self) -> Any:
        return json.loads(self.body)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_answer(sock: socket.socket, timeout: float) -> RawAnswer:
    """Read until the server ends the connection (or `timeout` seconds pass) and parse the
    answer, if one came."""
    data = bytearray()
    answer = RawAnswer()
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            chunk = sock.recv(CHUNK)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        answer.ending = "timeout"
    except ConnectionResetError:
        answer.ending = "reset"
    _parse(bytes(data), answer)
    return answer


def _parse(data: bytes, answer: RawAnswer) -> None:
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/"):
        return
    lines = head.decode("latin-1").split("\r\n")
    answer.status = int(lines[0].split()[1])
    for line in lines[1:]:
        name, _, value = line.partition(":")
        answer.headers[name.strip().lower()] = value.strip()
    answer.body = body


def connect(port: int, timeout: float = 10.0, source: str | None = None) -> socket.socket:
    """A connection to 127.0.0.1:`port`, from the local address `source` if given (any of
    127.0.0.0/8 is this machine's on Linux: as many clients as addresses)."""
    address = (source, 0) if source else None
    return socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=address)


def send_raw(port: int, data: bytes, timeout: float = 10.0, source: str | None = None) -> RawAnswer:
    """Send `data` on a new connection (as much as the server takes) and read the answer."""
    with connect(port, timeout, source) as sock:
        sender = threading.Thread(target=_send_all, args=(sock, data), daemon=True)
        sender.start()
        answer = read_answer(sock, timeout)
        sender.join(timeout)
        return answer


def ask(port: int, data: bytes, timeout: float = 10.0, source: str | None = None) -> RawAnswer:
    """Send `data` (all of it, which may be only the head of a request) and read one answer,
    without waiting for the server to close: `ending` is "open" when it had not."""
    with connect(port, timeout, source) as sock:
        sock.sendall(data)
        return read_one_answer(sock, timeout)


def read_one_answer(sock: socket.socket, timeout: float) -> RawAnswer:
    """Read until an answer's head and its Content-Length of body have come, the server ends
    the connection, or `timeout` seconds pass."""
    data = bytearray()
    answer = RawAnswer(ending="open")
    deadline = time.monotonic() + timeout
    try:
        while not _whole_answer(bytes(data)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            chunk = sock.recv(CHUNK)
            if not chunk:
                answer.ending = "closed"
                break
            data += chunk
    except TimeoutError:
        answer.ending = "timeout"
    except ConnectionResetError:
        answer.ending = "reset"
    _parse(bytes(data), answer)
    return answer


def _whole_answer(data: bytes) -> bool:
    head, found, body = data.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def _send_all(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    with contextlib.suppress(OSError):  # the server refused and closed: the point
        for start in range(0, len(view), CHUNK):
            sock.sendall(view[start : start + CHUNK])


def huge_request_line(size: int = HUGE_LINE_BYTES) -> bytes:
    query = b"a" * (size - 40)
    return b"GET /api/v1/search?q=" + query + b" HTTP/1.1\r\nHost: x\r\n\r\n"


def chunked_post(path: str, size: int) -> bytes:
    """A POST of `size` bytes of JSON-ish filler in 64 KiB chunks, without Content-Length."""
    piece = b"x" * CHUNK
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(size // CHUNK))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    return head + chunks + b"0\r\n\r\n"


@contextlib.contextmanager
def serve(
    index: str, log: Path, *, workers: int = 2, env: dict[str, str] | None = None
) -> Iterator[tuple[int, subprocess.Popen]]:
    """`searchsvc serve` over `index` on a free port with `workers` gunicorn workers, ready;
    stopped with SIGTERM afterwards if still running. Its output goes to `log`."""
    import requests

    port = free_port()
    command = [str(SEARCHSVC), "serve", "--index", index, "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(workers)]
    with open(log, "ab") as output:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).ok:
                    break
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield port, process
    finally:
        stop_process(process, timeout=60)


def assert_json_error(answer: RawAnswer, *statuses: int, ended: bool = True) -> dict:
    """An answer to a request refused before the app (by nginx or gunicorn): one of `statuses`,
    in the JSON error shape with the app's security headers, and (when `ended`) the connection
    ended."""
    assert answer.status in statuses, (answer.status, answer.body[:300])
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    error = answer.json()["error"]
    assert set(error) == {"status", "code", "message", "details"}
    assert error["status"] == answer.status
    if ended:
        assert answer.ending in ("closed", "reset")
    return error
