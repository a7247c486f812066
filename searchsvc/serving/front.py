"""The nginx front's files: its config from nginx.conf.template and its JSON error pages.

`write_front(run_dir, front)` writes them into the run directory of `searchsvc serve`
(serve.py), where nginx also keeps its pid file and temporary files. Started as root, nginx runs
its workers as an unprivileged user (WORKER_USERS), and the run directory is opened to that
user's group only.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import resource
from dataclasses import dataclass, field
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
# Who nginx's workers run as when it is started as root: the first of these users that exists,
# with its own group (Debian's nginx runs as www-data).
WORKER_USERS = ("www-data", "nobody")
# The answer to a record write without a key, as the app words it (api/auth.py), given by nginx
# before it reads the body.
NO_KEY_MESSAGE = "an API key is required: send `Authorization: Bearer <key>`"
AUTH_REALM = "searchsvc"
# The page of a body sent where the request takes none (a GET of a record, a DELETE).
NO_BODY_PAGE = "no-body/413.json"


def _configured_origins() -> tuple[str, ...]:
    """SEARCHSVC_CORS_ORIGINS, split as config.py splits it."""
    text = os.environ.get("SEARCHSVC_CORS_ORIGINS", "")
    return tuple(part.strip() for part in text.split(",") if part.strip())


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
    # Per client address (config FRONT_CONNECTIONS_PER_ADDRESS, FRONT_REQUESTS_PER_SECOND):
    # connections with a request under way, and requests a second; 0 for no limit.
    connections_per_address: int
    requests_per_second: int
    # The origins whose pages may read nginx's own refusals (a keyless write's 401, a 413, the
    # per-address 429), as they read the app's answers (config CORS_ORIGINS, api/http.py):
    # SEARCHSVC_CORS_ORIGINS, which gunicorn's app reads too.
    cors_origins: tuple[str, ...] = field(default_factory=_configured_origins)


def error_messages(front: Front) -> dict[int, str]:
    """The message of each status nginx answers itself."""
    line = limits.HEADER_BUFFER_KB * 1024
    return {
        400: "malformed request: its request line, headers or body could not be read",
        401: NO_KEY_MESSAGE,
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
        429: _too_many_message(front),
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


def _too_many_message(front: Front) -> str:
    bounds = []
    if front.requests_per_second > 0:
        bounds.append(f"{front.requests_per_second} requests a second")
    if front.connections_per_address > 0:
        bounds.append(f"{front.connections_per_address} at a time")
    within = f" (at most {' and '.join(bounds)})" if bounds else ""
    return f"too many requests from this address{within}: try again shortly"


def write_front(run_dir: Path, front: Front) -> Path:
    """Write nginx's config, error pages and temporary directory into `run_dir`; the config's
    path."""
    worker = _worker_user()
    pages = run_dir / "_errors"
    (pages / NO_BODY_PAGE).parent.mkdir(parents=True, exist_ok=True)
    for status, message in error_messages(front).items():
        (pages / f"{status}.json").write_bytes(error_body(status, message))
    (pages / NO_BODY_PAGE).write_bytes(error_body(413, "this request takes no body"))
    # nginx's master creates its temporary directories in here, for its workers' user.
    (run_dir / "tmp").mkdir(exist_ok=True)
    if worker is not None:
        _open_to_group(run_dir, worker.pw_gid)
    config = run_dir / CONFIG_NAME
    config.write_text(render(_template(), _values(run_dir, front, worker)))
    return config


def render(template: str, values: dict[str, object]) -> str:
    """The template with each @NAME@ replaced; a name without a value is a KeyError."""
    return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)


def _template() -> str:
    return resources.files("searchsvc.serving").joinpath(TEMPLATE).read_text()


def _values(run_dir: Path, front: Front, worker: pwd.struct_passwd | None) -> dict[str, object]:
    open_files = _open_files()
    return {
        "RUN_DIR": run_dir,
        # The app's security headers on the answers nginx makes itself (its error pages).
        "SECURITY_HEADERS": " ".join(
            f'add_header {name} "{value}" always;' for name, value in DATA_HEADERS.items()
        ),
        "SOCKET": run_dir / SOCKET_NAME,
        "LISTEN": _listen(front),
        "USER": _user_directive(worker),
        "ADDRESS_LIMITS": address_limits(front),
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
        "RATE_RETRY_AFTER": limits.RATE_RETRY_AFTER,
        "REFUSED_LINGERING_MS": limits.REFUSED_LINGERING_MS,
        "NO_BODY_PAGE": NO_BODY_PAGE,
        "AUTH_REALM": AUTH_REALM,
        "CORS_ORIGINS": cors_origins_map(front),
    }


# What an origin nginx names may hold (a scheme, a host, a port): anything else could not match
# a browser's Origin header anyway, and is left out of the config rather than quoted.
_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]*://[a-z0-9.\-\[\]:_%]+", re.IGNORECASE)


def cors_origins_map(front: Front) -> str:
    """The body of nginx's map from the request's Origin to the Access-Control-Allow-Origin of
    its refusals: `*` for any origin, the origin itself for a configured one, else none."""
    origins = [origin.rstrip("/") for origin in front.cors_origins]
    if "*" in origins:
        return 'default "*";'
    lines = ['default "";']
    lines += [f'"{origin}" $http_origin;' for origin in origins if _ORIGIN.fullmatch(origin)]
    return " ".join(lines)


def address_limits(front: Front) -> str:
    """nginx's per-address limits (http level), with a 429 beyond them; a comment when both are
    0 (no limit)."""
    lines = []
    zone = f"$binary_remote_addr zone={{}}:{limits.ADDRESS_ZONE_MB}m"
    if front.connections_per_address > 0:
        lines += [
            f"limit_conn_zone {zone.format('connections')};",
            f"limit_conn connections {front.connections_per_address};",
            "limit_conn_status 429;",
            "limit_conn_log_level info;",
        ]
    if front.requests_per_second > 0:
        burst = front.requests_per_second * limits.REQUEST_BURST_FACTOR
        lines += [
            f"limit_req_zone {zone.format('requests')} rate={front.requests_per_second}r/s;",
            f"limit_req zone=requests burst={burst} nodelay;",
            "limit_req_status 429;",
            "limit_req_log_level info;",
        ]
    return "\n    ".join(lines) or "# no per-address limits (both set to 0)"


def _listen(front: Front) -> str:
    if ":" in front.host:  # IPv6
        return f"[{front.host}]:{front.port}"
    return f"{front.host}:{front.port}" if front.host else str(front.port)


def _open_files() -> int:
    """As many open files as nginx may take without privileges (its soft limit may be raised
    up to the hard one), at most MAX_OPEN_FILES."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES)


def _worker_user() -> pwd.struct_passwd | None:
    """Who nginx's workers run as when started as root (None: as the user who started it)."""
    if os.geteuid() != 0:
        return None  # nginx cannot switch users (the Docker image runs as its own user)
    for name in WORKER_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise OSError(f"none of the users {', '.join(WORKER_USERS)} exists for nginx's workers")


def _open_to_group(run_dir: Path, gid: int) -> None:
    # The workers' group enters the run directory (gunicorn's socket, the temporary files) and
    # reads the error pages; no one else does, nor lists it.
    for path, mode in ((run_dir, 0o710), (run_dir / "tmp", 0o710)):
        os.chown(path, -1, gid)
        os.chmod(path, mode)
    for path in [run_dir / "_errors", *(run_dir / "_errors").rglob("*")]:
        os.chown(path, -1, gid)
        os.chmod(path, 0o750 if path.is_dir() else 0o640)


def _user_directive(worker: pwd.struct_passwd | None) -> str:
    if worker is None:
        return "# workers run as the user who started nginx"
    return f"user {worker.pw_name} {grp.getgrgid(worker.pw_gid).gr_name};"


def _access_log() -> str:
    # nginx opens /dev/stdout by name: that fails when stdout is a socket (systemd's journal),
    # and nginx would not start. Its access lines are left out then; gunicorn's remain.
    try:
        os.close(os.open("/dev/stdout", os.O_WRONLY | os.O_APPEND))
    except OSError:
        return "off"
    return "/dev/stdout front if=$answered_by_front"
