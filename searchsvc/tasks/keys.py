"""API keys: created and revoked with `searchsvc keys`, stored only as SHA-256 digests.

A key reads `ssk_<id>_<secret>`. The id finds the stored key; the secret is checked against
its digest with a constant-time comparison. The secret is 256 random bits, so a plain SHA-256
is enough to keep a stolen database from yielding keys (slow password hashes exist for secrets
people choose, which can be guessed). The secret is shown once, when the key is created.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from searchsvc.domain.errors import InvalidRequest
from searchsvc.tasks.queue import TaskQueue

# read: searches and records when reads need a key; write: writes and their tasks; admin: all.
SCOPES = ("read", "write", "admin")
PREFIX = "ssk"
_KEY = re.compile(rf"{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})")
MAX_NAME_LENGTH = 100
# Compared against when the id is unknown, so that an unknown id takes as long as a wrong secret.
_NO_DIGEST = hashlib.sha256(b"").digest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "scopes": list(self.scopes),
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


class KeyStore:
    """The API keys kept in a task queue's database."""

    def __init__(self, queue: TaskQueue) -> None:
        self.queue = queue

    def create(self, name: str, scopes: tuple[str, ...] | list[str]) -> tuple[ApiKey, str]:
        """A new key and its secret token (shown once: only its digest is kept)."""
        name = name.strip()
        if not name or len(name) > MAX_NAME_LENGTH:
            raise InvalidRequest(f"a key name has 1 to {MAX_NAME_LENGTH} characters")
        unknown = sorted(set(scopes) - set(SCOPES))
        if unknown or not scopes:
            raise InvalidRequest(
                f"scopes are {', '.join(SCOPES)}; got {', '.join(unknown) or 'none'}"
            )
        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        key = ApiKey(
            key_id,
            name,
            tuple(s for s in SCOPES if s in scopes),
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self.queue.transaction() as connection:
            connection.execute(
                "INSERT INTO api_keys (id, name, digest, scopes, created_at) VALUES (?,?,?,?,?)",
                (key.id, key.name, _digest(secret), ",".join(key.scopes), key.created_at),
            )
        return key, f"{PREFIX}_{key_id}_{secret}"

    def keys(self) -> list[ApiKey]:
        rows = self.queue.query(
            "SELECT id, name, scopes, created_at, revoked_at FROM api_keys ORDER BY created_at"
        )
        return [_key_of(row) for row in rows]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (its token stops working at once); InvalidRequest if unknown."""
        revoked_at = datetime.now(UTC).isoformat(timespec="seconds")
        with self.queue.transaction() as connection:
            cursor = connection.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
                (revoked_at, key_id),
            )
        if not cursor.rowcount:
            raise InvalidRequest(f"no API key with id {key_id!r}", id=key_id)
        return next(key for key in self.keys() if key.id == key_id)

    def authenticate(self, token: str) -> ApiKey | None:
        """The live key a token stands for, or None."""
        match = _KEY.fullmatch(token or "")
        key_id, secret = match.groups() if match else ("", "")
        rows = self.queue.query(
            "SELECT id, name, scopes, created_at, revoked_at, digest FROM api_keys WHERE id = ?",
            (key_id,),
        )
        stored = rows[0]["digest"] if rows else _NO_DIGEST
        valid = hmac.compare_digest(stored, _digest(secret))
        if not (rows and match and valid) or rows[0]["revoked_at"]:
            return None
        return _key_of(rows[0])


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def _key_of(row: Any) -> ApiKey:
    return ApiKey(
        id=row["id"],
        name=row["name"],
        scopes=tuple(row["scopes"].split(",")),
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )
