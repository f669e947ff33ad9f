"""The token vault: what hand-offs obtain (API keys, third-party OAuth tokens), encrypted at rest.

Rules it enforces (spec U10):

- Values are sealed with AES-256-GCM (`cryptography`). Rows are stored under a keyed digest of
  (user, provider): HMAC-SHA256 under an index key derived from the ring key that sealed the
  row, so the store names no one and its keys cannot be guessed from a list of user ids. The
  associated data is that row key, and the sealed plaintext carries the user and provider too,
  so a row copied to another user, or to another provider of the same user, fails to decrypt
  (`VaultError(reason="tampered")`) instead of handing one person's token to another.
- Values never go back to the MCP client: nothing in the hand-off path returns them, and
  `get()` wraps them in `Secret`, whose repr and str are masked, so a stray log line or
  f-string prints `Secret('***')`. Call `.reveal()` only where the server uses the value.
- The key comes from configuration, never from code: a key ring in the environment variable
  MCP_ELICIT_VAULT_KEYS, "id:base64key,id:base64key" (32-byte keys, base64 or base64url).

Rotation: put a new key first in the ring and keep the old ones after it. The first key
encrypts; every key decrypts (rows say which key sealed them). Then run `rewrap()` (or let
reads re-seal rows lazily) until no row uses the old key, and drop it from the ring. A row
whose key has left the ring raises `VaultError(reason="unknown_key")`.

Storage is pluggable: memory (tests, one process), Redis (replicas), SQLite (one host).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio.to_thread
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mcp_elicit.audit.base import enter_wal
from mcp_elicit.errors import ConfigError, InvalidArgument, VaultError

__all__ = [
    "MAX_VAULT_VALUE_BYTES",
    "SQLITE_BUSY_TIMEOUT_S",
    "VAULT_KEYS_ENV",
    "VAULT_KEY_BYTES",
    "KeyRing",
    "MemoryVaultStorage",
    "RedisVaultStorage",
    "SQLiteVaultStorage",
    "Secret",
    "TokenVault",
    "VaultStorage",
]

logger = logging.getLogger("mcp_elicit.server.vault")

# The environment variable that holds the key ring.
VAULT_KEYS_ENV = "MCP_ELICIT_VAULT_KEYS"
# AES-256: 32-byte keys. A shorter key is refused rather than padded.
VAULT_KEY_BYTES = 32
# The largest value (JSON-encoded) the vault seals. An API key is under 200 bytes and an OAuth
# token response a few KB; 64 KiB refuses anything that is clearly not a credential.
MAX_VAULT_VALUE_BYTES = 65_536
# How long a SQLite vault waits for another process's lock (opening the file, a write) before
# the operation fails: as long as the SQLite audit trail waits.
SQLITE_BUSY_TIMEOUT_S = 5.0
# AES-GCM nonce: 96 random bits per row, the size GCM is specified for.
_NONCE_BYTES = 12
_AAD_PREFIX = b"mcp-elicit/vault/2\x00"
_INDEX_LABEL = b"mcp-elicit/vault/index/1"
_ROW_VERSION = 2


class Secret:
    """A value from the vault that does not print itself."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def reveal(self) -> Any:
        """The value itself, for the server's own call to the third party; never return it to a client."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise InvalidArgument("Secret", "a vault Secret cannot be pickled")


def _decode_key(text: str) -> bytes:
    padded = text.strip() + "=" * (-len(text.strip()) % 4)
    try:
        return base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
    except (binascii.Error, ValueError):
        return b""


class KeyRing:
    """Named AES-256 keys; the first one encrypts, all of them decrypt."""

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise ConfigError(VAULT_KEYS_ENV, "the vault key ring is empty")
        self._keys: dict[str, AESGCM] = {}
        self._index: dict[str, bytes] = {}
        for kid, key in keys:
            if not kid or not kid.isascii() or ":" in kid or "," in kid:
                raise ConfigError(VAULT_KEYS_ENV, f"bad key id {kid!r}")
            if len(key) != VAULT_KEY_BYTES:
                raise ConfigError(VAULT_KEYS_ENV, f"key {kid!r} is not {VAULT_KEY_BYTES} bytes")
            if kid in self._keys:
                raise ConfigError(VAULT_KEYS_ENV, f"key id {kid!r} appears twice")
            self._keys[kid] = AESGCM(key)
            # a separate key for row names, derived so it never doubles as the encryption key
            self._index[kid] = hmac.new(key, _INDEX_LABEL, hashlib.sha256).digest()
        self.primary = keys[0][0]

    @classmethod
    def from_string(cls, text: str) -> KeyRing:
        """Parse "id:base64key,id:base64key" (first is primary)."""
        pairs = []
        for item in text.split(","):
            kid, sep, encoded = item.strip().partition(":")
            if not sep:
                raise ConfigError(VAULT_KEYS_ENV, "each entry must be id:base64key")
            pairs.append((kid, _decode_key(encoded)))
        return cls(pairs)

    @classmethod
    def from_env(cls, name: str = VAULT_KEYS_ENV, environ: Mapping[str, str] | None = None) -> KeyRing:
        text = (os.environ if environ is None else environ).get(name, "")
        if not text:
            raise ConfigError(name, "not set: the vault needs a key ring (id:base64key,...)")
        return cls.from_string(text)

    @classmethod
    def generate(cls, kid: str = "k1") -> KeyRing:
        """A fresh random one-key ring: for tests and throwaway development servers."""
        return cls([(kid, secrets.token_bytes(VAULT_KEY_BYTES))])

    @staticmethod
    def new_key_text(kid: str) -> str:
        """A new "id:base64key" entry to paste into MCP_ELICIT_VAULT_KEYS."""
        return f"{kid}:{base64.urlsafe_b64encode(secrets.token_bytes(VAULT_KEY_BYTES)).decode().rstrip('=')}"

    def cipher(self, kid: str) -> AESGCM | None:
        return self._keys.get(kid)

    def row_key(self, kid: str, user: str, provider: str) -> str:
        """Where the row for (user, provider) sealed under `kid` is stored: a keyed digest."""
        return hmac.new(self._index[kid], _ident(user, provider), hashlib.sha256).hexdigest()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._keys)


class VaultStorage(Protocol):
    async def put(self, row_key: str, row: str) -> None: ...
    async def get(self, row_key: str) -> str | None: ...
    async def delete(self, row_key: str) -> None: ...
    def rows(self) -> AsyncIterator[tuple[str, str]]: ...


class MemoryVaultStorage:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def put(self, row_key: str, row: str) -> None:
        self.data[row_key] = row

    async def get(self, row_key: str) -> str | None:
        return self.data.get(row_key)

    async def delete(self, row_key: str) -> None:
        self.data.pop(row_key, None)

    async def rows(self) -> AsyncIterator[tuple[str, str]]:
        for item in list(self.data.items()):
            yield item


class RedisVaultStorage:
    """Rows in one Redis hash, `<prefix>rows`."""

    def __init__(self, redis: Any, prefix: str = "mcp-elicit:vault:") -> None:
        self._redis = redis
        self._hash = f"{prefix}rows"

    async def put(self, row_key: str, row: str) -> None:
        await self._redis.hset(self._hash, row_key, row)

    async def get(self, row_key: str) -> str | None:
        raw = await self._redis.hget(self._hash, row_key)
        return raw.decode() if isinstance(raw, bytes) else raw

    async def delete(self, row_key: str) -> None:
        await self._redis.hdel(self._hash, row_key)

    async def rows(self) -> AsyncIterator[tuple[str, str]]:
        async for key, raw in self._redis.hscan_iter(self._hash):
            k = key.decode() if isinstance(key, bytes) else key
            yield k, raw.decode() if isinstance(raw, bytes) else raw


class SQLiteVaultStorage:
    """Rows in a SQLite table (WAL), for a single-host server that should survive restarts."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=SQLITE_BUSY_TIMEOUT_S
        )
        self._lock = threading.Lock()
        with self._lock:
            enter_wal(self._db, SQLITE_BUSY_TIMEOUT_S)
            self._db.execute("CREATE TABLE IF NOT EXISTS vault (k TEXT PRIMARY KEY, row TEXT NOT NULL)")

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    async def put(self, row_key: str, row: str) -> None:
        sql = "INSERT INTO vault (k, row) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET row = excluded.row"
        await anyio.to_thread.run_sync(self._run, sql, (row_key, row))

    async def get(self, row_key: str) -> str | None:
        found = await anyio.to_thread.run_sync(self._run, "SELECT row FROM vault WHERE k = ?", (row_key,))
        return str(found[0][0]) if found else None

    async def delete(self, row_key: str) -> None:
        await anyio.to_thread.run_sync(self._run, "DELETE FROM vault WHERE k = ?", (row_key,))

    async def rows(self) -> AsyncIterator[tuple[str, str]]:
        found = await anyio.to_thread.run_sync(self._run, "SELECT k, row FROM vault", ())
        for k, row in found:
            yield str(k), str(row)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _ident(user: str, provider: str) -> bytes:
    return json.dumps([user, provider], separators=(",", ":"), ensure_ascii=True).encode()


class TokenVault:
    """Encrypted (user, provider) → value. Values are JSON-serialisable (a string, a token dict)."""

    def __init__(
        self,
        keys: KeyRing,
        storage: VaultStorage | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.keys = keys
        self.storage: VaultStorage = storage if storage is not None else MemoryVaultStorage()
        self._clock = clock

    def row_key(self, user: str, provider: str) -> str:
        """Where a (user, provider) row sealed under the primary key is stored."""
        return self.keys.row_key(self.keys.primary, user, provider)

    def _seal(self, user: str, provider: str, value: Any) -> tuple[str, str]:
        """(row key, row) for `value`, sealed under the primary key."""
        plain = json.dumps({"u": user, "p": provider, "x": value}, separators=(",", ":")).encode()
        if len(plain) > MAX_VAULT_VALUE_BYTES:
            raise VaultError(provider, "too_large")
        kid = self.keys.primary
        cipher = self.keys.cipher(kid)
        if cipher is None:  # cannot happen: the primary is always in the ring
            raise VaultError(provider, "unknown_key")
        key = self.keys.row_key(kid, user, provider)
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = cipher.encrypt(nonce, plain, _AAD_PREFIX + key.encode())
        row = {
            "v": _ROW_VERSION,
            "kid": kid,
            "n": base64.b64encode(nonce).decode(),
            "c": base64.b64encode(sealed).decode(),
            "t": self._clock(),
        }
        return key, json.dumps(row, separators=(",", ":"))

    def _open_at(self, key: str, raw: str, provider: str) -> tuple[str, str, Any, str]:
        """Decrypt the row stored at `key` (the associated data): (user, provider, value, kid)."""
        try:
            row = json.loads(raw)
            kid = str(row["kid"])
            nonce = base64.b64decode(row["n"], validate=True)
            sealed = base64.b64decode(row["c"], validate=True)
        except (ValueError, KeyError, TypeError):
            raise VaultError(provider, "malformed") from None
        cipher = self.keys.cipher(kid)
        if cipher is None:
            raise VaultError(provider, "unknown_key")
        try:
            plain = json.loads(cipher.decrypt(nonce, sealed, _AAD_PREFIX + key.encode()))
            return str(plain["u"]), str(plain["p"]), plain["x"], kid
        except (InvalidTag, ValueError, KeyError, TypeError):
            raise VaultError(provider, "tampered") from None

    def _open(self, user: str, provider: str, key: str, raw: str) -> tuple[Any, str]:
        """Decrypt a row for (user, provider): the ones asked for, never the ones the row holds,
        so a copied row cannot be read as someone else's."""
        owner, source, value, kid = self._open_at(key, raw, provider)
        if (owner, source) != (user, provider) or key != self.keys.row_key(kid, user, provider):
            raise VaultError(provider, "tampered")
        return value, kid

    async def put(self, user: str, provider: str, value: Any) -> None:
        """Seal `value` for `user` (a Principal key) and `provider`, replacing any earlier one."""
        key, row = self._seal(user, provider, value)
        await self.storage.put(key, row)
        await self._drop_older(user, provider)
        logger.info("vault: stored a value for provider %s", provider)

    async def _drop_older(self, user: str, provider: str) -> None:
        for kid in self.keys.ids[1:]:
            await self.storage.delete(self.keys.row_key(kid, user, provider))

    async def _find(self, user: str, provider: str) -> tuple[str, str] | None:
        """(row key, row): under the primary key's name first, then under older keys' names."""
        for kid in self.keys.ids:
            key = self.keys.row_key(kid, user, provider)
            raw = await self.storage.get(key)
            if raw is not None:
                return key, raw
        return None

    async def get(self, user: str, provider: str) -> Secret | None:
        """The value for (user, provider), or None; VaultError when the row does not decrypt.

        A row sealed with an older key of the ring is re-sealed with the primary key (and moved
        to the primary key's row name) on the way.
        """
        found = await self._find(user, provider)
        if found is None:
            return None
        value, kid = self._open(user, provider, *found)
        if kid != self.keys.primary:
            key, row = self._seal(user, provider, value)
            await self.storage.put(key, row)
            await self.storage.delete(found[0])
        return Secret(value)

    async def has(self, user: str, provider: str) -> bool:
        """True when a readable value exists; an unreadable row counts as absent (and is logged)."""
        try:
            return await self.get(user, provider) is not None
        except VaultError as exc:
            logger.warning("vault: row for provider %s does not decrypt (%s)", provider, exc.reason)
            return False

    async def delete(self, user: str, provider: str) -> None:
        await self.storage.delete(self.row_key(user, provider))
        await self._drop_older(user, provider)

    async def rewrap(self) -> int:
        """Re-seal every row not under the primary key; returns how many were re-sealed.

        A row opens only at the name its own user, provider and key give it, so rewrapping
        cannot launder a row copied under another user.
        """
        rows = [pair async for pair in self.storage.rows()]
        done = 0
        for key, raw in rows:
            try:
                kid = str(json.loads(raw)["kid"])
            except (ValueError, KeyError, TypeError):
                logger.warning("vault: skipped a malformed row during rewrap")
                continue
            if kid == self.keys.primary:
                continue
            try:
                user, provider, _, _ = self._open_at(key, raw, "")
                value, _ = self._open(user, provider, key, raw)
            except VaultError:
                logger.warning("vault: skipped a row that does not open where it is stored")
                continue
            new_key, row = self._seal(user, provider, value)
            await self.storage.put(new_key, row)
            await self.storage.delete(key)
            done += 1
        return done
