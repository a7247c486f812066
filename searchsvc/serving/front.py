"""The nginx front's files: its config from nginx.conf.template and its JSON error pages.

`write_front(run_dir, front)` writes them into the run directory of `searchsvc serve`
(serve.py), where nginx also keeps its pid file and temporary files.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import resource
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from searchsvc.http.headers import DATA_HEADERS
from searchsvc.serving import limits
from searchsvc.serving.errors import error_body

TEMPLATE = "nginx.conf.template"
CONFIG_NAME = "nginx.conf"
SOCKET_NAME = "gunicorn.sock"
# As the app says on its own 503s: when to try again after a 502, 503 or 504.
RETRY_AFTER_SECONDS = 5
# More open files than nginx's default allows are not needed; a connection passed on to
# gunicorn takes two (client and upstream).
MAX_OPEN_FILES = 8192
_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


@dataclass(frozen=True)
class Front:
    """What the nginx config says besides the fixed bounds of limits.py."""

    host: str
    port: int
    # The app's body limits (config MAX_CONTENT_LENGTH, MAX_WRITE_CONTENT_LENGTH).
    max_body: int
    max_write_body: int
    # gunicorn's worker timeout: nginx waits a little longer for an answer.
    worker_timeout: int


def error_messages(front: Front) -> dict[int, str]:
    """The message of each status nginx answers itself."""
    line = limits.HEADER_BUFFER_KB * 1024
    return {
        400: "malformed request: its request line, headers or body could not be read",
        403: "forbidden",
        404: "not found",
        405: "method not allowed",
        408: (
            f"request not sent in time: the headers within {limits.CLIENT_HEADER_TIMEOUT} s, "
            f"each part of the body within {limits.CLIENT_BODY_TIMEOUT} s"
        ),
        413: (
            f"request body over {front.max_body} bytes "
            f"({front.max_write_body} bytes for record writes)"
        ),
        414: f"request line over {line} bytes: {limits.LONG_QUERY_HINT}",
        431: (
            f"request headers too large: a line over {line} bytes, or over "
            f"{line * limits.HEADER_BUFFERS} bytes in all"
        ),
        500: "internal server error",
        501: "transfer coding not implemented",
        502: "the search service is not answering: try again shortly",
        503: "the search service is unavailable: try again shortly",
        504: "the search service took too long to answer",
        505: "HTTP version not supported: use HTTP/1.1",
    }


def write_front(run_dir: Path, front: Front) -> Path:
    """Write nginx's config, error pages and temporary directory into `run_dir`; the config's
    path."""
    (run_dir / "tmp").mkdir(exist_ok=True)
    pages = run_dir / "_errors"
    pages.mkdir(exist_ok=True)
    for status, message in error_messages(front).items():
        (pages / f"{status}.json").write_bytes(error_body(status, message))
    config = run_dir / CONFIG_NAME
    config.write_text(render(_template(), _values(run_dir, front)))
    return config


def render(template: str, values: dict[str, object]) -> str:
    """The template with each @NAME@ replaced; a name without a value is a KeyError."""
    return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)


def _template() -> str:
    return resources.files("searchsvc.serving").joinpath(TEMPLATE).read_text()


def _values(run_dir: Path, front: Front) -> dict[str, object]:
    open_files = _open_files()
    return {
        "RUN_DIR": run_dir,
        # The app's security headers on the answers nginx makes itself (its error pages).
        "SECURITY_HEADERS": " ".join(
            f'add_header {name} "{value}" always;' for name, value in DATA_HEADERS.items()
        ),
        "SOCKET": run_dir / SOCKET_NAME,
        "LISTEN": _listen(front),
        "USER": _user_directive(),
        "OPEN_FILES": open_files,
        "WORKER_CONNECTIONS": open_files // 2,
        "ACCESS_LOG": _access_log(),
        "HEADER_BUFFERS": limits.HEADER_BUFFERS,
        "HEADER_BUFFER_KB": limits.HEADER_BUFFER_KB,
        "CLIENT_HEADER_TIMEOUT": limits.CLIENT_HEADER_TIMEOUT,
        "CLIENT_BODY_TIMEOUT": limits.CLIENT_BODY_TIMEOUT,
        "SEND_TIMEOUT": limits.SEND_TIMEOUT,
        "KEEPALIVE_TIMEOUT": limits.KEEPALIVE_TIMEOUT,
        "LINGERING_TIME": limits.LINGERING_TIME,
        "MAX_BODY": front.max_body,
        "MAX_WRITE_BODY": front.max_write_body,
        "UPSTREAM_TIMEOUT": front.worker_timeout + 5,
        "RETRY_AFTER": RETRY_AFTER_SECONDS,
    }


def _listen(front: Front) -> str:
    if ":" in front.host:  # IPv6
        return f"[{front.host}]:{front.port}"
    return f"{front.host}:{front.port}" if front.host else str(front.port)


def _open_files() -> int:
    """As many open files as nginx may take without privileges (its soft limit may be raised
    up to the hard one), at most MAX_OPEN_FILES."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES)


def _user_directive() -> str:
    # Started as root, nginx would run its workers as `nobody`, who cannot enter the private run
    # directory nor reach gunicorn's socket: they run as the starting user instead. Started as
    # another user (the Docker image's), nginx cannot switch users at all.
    if os.geteuid() != 0:
        return "# workers run as the user who started nginx"
    user = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    return f"user {user} {group};"


def _access_log() -> str:
    # nginx opens /dev/stdout by name: that fails when stdout is a socket (systemd's journal),
    # and nginx would not start. Its access lines are left out then; gunicorn's remain.
    try:
        os.close(os.open("/dev/stdout", os.O_WRONLY | os.O_APPEND))
    except OSError:
        return "off"
    return "/dev/stdout front if=$answered_by_front"
