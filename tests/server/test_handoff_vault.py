"""The token vault: AES-GCM bound to (user, provider), key rotation, values that never print (U10)."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.errors import ConfigError, VaultError, VaultProblem
from mcp_elicit.server.vault import (
    MAX_VAULT_VALUE_BYTES,
    VAULT_KEY_BYTES,
    KeyRing,
    MemoryVaultStorage,
    RedisVaultStorage,
    Secret,
    SQLiteVaultStorage,
    TokenVault,
)
from tests.server.handoff_support import ALICE, BOB, SECRET_VALUE, redis_client

pytestmark = pytest.mark.anyio

TOKEN = {"type": "oauth", "token": {"access_token": SECRET_VALUE, "refresh_token": "rt-9"}}


def ring(*kids: str) -> KeyRing:
    return KeyRing([(kid, bytes([i + 1]) * VAULT_KEY_BYTES) for i, kid in enumerate(kids)])


async def test_a_value_comes_back_for_the_same_user_and_provider() -> None:
    vault = TokenVault(ring("k1"))
    await vault.put(ALICE.key, "github", TOKEN)
    secret = await vault.get(ALICE.key, "github")
    assert secret is not None
    assert secret.reveal() == TOKEN
    assert await vault.get(BOB.key, "github") is None
    assert await vault.get(ALICE.key, "gitlab") is None


async def test_storage_holds_ciphertext_and_hashed_row_keys_only() -> None:
    storage = MemoryVaultStorage()
    vault = TokenVault(ring("k1"), storage)
    await vault.put(ALICE.key, "github", TOKEN)
    [(key, row)] = storage.data.items()
    assert key == vault.row_key(ALICE.key, "github")
    assert ALICE.key not in key
    assert ALICE.key not in row
    assert SECRET_VALUE not in row
    assert set(json.loads(row)) == {"v", "kid", "n", "c", "t"}  # no user or provider in clear
    # keyed: the same user and provider under another ring are stored under another name
    other = TokenVault(KeyRing([("k1", b"\x05" * 32)]), MemoryVaultStorage())
    assert other.row_key(ALICE.key, "github") != key


@pytest.mark.parametrize(("user", "provider"), [(BOB.key, "github"), (ALICE.key, "gitlab")])
async def test_a_row_copied_to_another_user_or_provider_fails_to_decrypt(user: str, provider: str) -> None:
    """U10: tokens are bound to the user; the associated data is (user, provider)."""
    storage = MemoryVaultStorage()
    vault = TokenVault(ring("k1"), storage)
    await vault.put(ALICE.key, "github", TOKEN)
    storage.data[vault.row_key(user, provider)] = storage.data[vault.row_key(ALICE.key, "github")]
    with pytest.raises(VaultError) as info:
        await vault.get(user, provider)
    assert (info.value.provider, info.value.reason) == (provider, "tampered")
    assert await vault.has(user, provider) is False


async def test_a_row_copied_under_another_name_is_never_rewrapped_into_it() -> None:
    """A copied row opens nowhere but at its own name, so rewrap cannot launder it."""
    storage = MemoryVaultStorage()
    old = TokenVault(ring("k1"), storage)
    await old.put(ALICE.key, "github", TOKEN)
    storage.data[old.row_key(BOB.key, "github")] = storage.data[old.row_key(ALICE.key, "github")]
    vault = TokenVault(KeyRing([("k2", b"\x09" * 32), ("k1", b"\x01" * 32)]), storage)
    assert await vault.rewrap() == 1  # Alice's own row only
    assert await vault.has(BOB.key, "github") is False
    secret = await vault.get(ALICE.key, "github")
    assert secret is not None
    assert secret.reveal() == TOKEN


@settings(max_examples=60, deadline=None)
@given(position=st.integers(min_value=0, max_value=10_000), value=st.text(min_size=1, max_size=64))
def test_any_changed_byte_of_a_sealed_value_is_detected(position: int, value: str) -> None:
    vault = TokenVault(ring("k1"))
    key, raw = vault._seal(ALICE.key, "github", value)
    row = json.loads(raw)
    sealed = bytearray(base64.b64decode(row["c"]))
    sealed[position % len(sealed)] ^= 0x01
    row["c"] = base64.b64encode(bytes(sealed)).decode()
    with pytest.raises(VaultError):
        vault._open(ALICE.key, "github", key, json.dumps(row))
    assert vault._open(ALICE.key, "github", key, raw)[0] == value


async def test_rotation_first_key_encrypts_every_key_decrypts_and_rows_are_resealed() -> None:
    storage = MemoryVaultStorage()
    old = TokenVault(ring("k1"), storage)
    await old.put(ALICE.key, "github", TOKEN)
    await old.put(BOB.key, "github", {"type": "api_key", "value": "b"})
    rotated = TokenVault(KeyRing([("k2", b"\x09" * 32), ("k1", b"\x01" * 32)]), storage)
    secret = await rotated.get(ALICE.key, "github")  # read with the old key, re-sealed lazily
    assert secret is not None
    assert secret.reveal() == TOKEN
    assert json.loads(storage.data[rotated.row_key(ALICE.key, "github")])["kid"] == "k2"
    assert old.row_key(ALICE.key, "github") not in storage.data  # moved to the new key's name
    assert await rotated.rewrap() == 1  # Bob's row; Alice's was already re-sealed
    assert {json.loads(r)["kid"] for r in storage.data.values()} == {"k2"}
    only_new = TokenVault(KeyRing([("k2", b"\x09" * 32)]), storage)
    assert (await only_new.get(BOB.key, "github")).reveal()["value"] == "b"  # type: ignore[union-attr]


async def test_a_row_whose_key_left_the_ring_is_not_found_and_not_rewrapped() -> None:
    """Row names are keyed by the ring: once a key has left it, its rows cannot be found (the
    person is asked again) and rewrap leaves them alone."""
    storage = MemoryVaultStorage()
    await TokenVault(ring("k1"), storage).put(ALICE.key, "github", TOKEN)
    vault = TokenVault(KeyRing([("k2", b"\x09" * 32)]), storage)
    assert await vault.get(ALICE.key, "github") is None
    assert await vault.rewrap() == 0


def test_the_key_ring_comes_from_the_environment() -> None:
    k2, k1 = KeyRing.new_key_text("k2"), KeyRing.new_key_text("k1")
    keys = KeyRing.from_env(environ={"MCP_ELICIT_VAULT_KEYS": f"{k2}, {k1}"})
    assert keys.primary == "k2"
    assert keys.ids == ("k2", "k1")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "k1",
        "k1:" + base64.b64encode(b"short").decode(),
        f"k1:{'A' * 43},k1:{'B' * 43}",
        f"a,b:{'A' * 43}",
    ],
    ids=["empty", "no-key", "short-key", "duplicate-id", "bad-id"],
)
def test_a_bad_key_ring_is_refused_at_startup(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        KeyRing.from_env(environ={"MCP_ELICIT_VAULT_KEYS": text})
    assert info.value.key == "MCP_ELICIT_VAULT_KEYS"


async def test_an_oversized_value_is_refused() -> None:
    with pytest.raises(VaultError) as info:
        await TokenVault(ring("k1")).put(ALICE.key, "github", "x" * MAX_VAULT_VALUE_BYTES)
    assert info.value.reason == VaultProblem.TOO_LARGE


def test_a_secret_never_prints_its_value() -> None:
    secret = Secret(TOKEN)
    assert SECRET_VALUE not in repr(secret)
    assert SECRET_VALUE not in str(secret)
    assert SECRET_VALUE not in f"{secret}"
    assert SECRET_VALUE not in repr([secret])
    with pytest.raises(TypeError):
        __import__("pickle").dumps(secret)


async def test_vault_operations_never_log_the_value(caplog: pytest.LogCaptureFixture) -> None:
    """U10: values are never logged, at any level, even when decryption fails."""
    caplog.set_level(logging.DEBUG)
    storage = MemoryVaultStorage()
    vault = TokenVault(ring("k1"), storage)
    await vault.put(ALICE.key, "github", TOKEN)
    await vault.get(ALICE.key, "github")
    storage.data[vault.row_key(BOB.key, "github")] = storage.data[vault.row_key(ALICE.key, "github")]
    assert await vault.has(BOB.key, "github") is False
    assert caplog.records
    assert SECRET_VALUE not in caplog.text


async def _round_trip(storage: Any) -> None:
    vault = TokenVault(ring("k1"), storage)
    await vault.put(ALICE.key, "github", TOKEN)
    await vault.put(ALICE.key, "gitlab", {"type": "api_key", "value": "g"})
    assert (await vault.get(ALICE.key, "github")).reveal() == TOKEN  # type: ignore[union-attr]
    assert sorted([k async for k, _ in storage.rows()]) == sorted(
        [vault.row_key(ALICE.key, "github"), vault.row_key(ALICE.key, "gitlab")]
    )
    await vault.delete(ALICE.key, "github")
    assert await vault.get(ALICE.key, "github") is None
    rotated = TokenVault(KeyRing([("k2", b"\x07" * 32), ("k1", b"\x01" * 32)]), storage)
    assert await rotated.rewrap() == 1


async def test_sqlite_storage_keeps_rows_across_connections(tmp_path: Path) -> None:
    path = str(tmp_path / "vault.sqlite3")
    storage = SQLiteVaultStorage(path)
    await _round_trip(storage)
    storage.close()
    reopened = SQLiteVaultStorage(path)
    vault = TokenVault(KeyRing([("k2", b"\x07" * 32)]), reopened)
    assert (await vault.get(ALICE.key, "gitlab")).reveal()["value"] == "g"  # type: ignore[union-attr]
    reopened.close()


@pytest.mark.redis
async def test_redis_storage_round_trips_and_rotates() -> None:
    async with redis_client() as (redis, prefix):
        await _round_trip(RedisVaultStorage(redis, prefix))
        assert SECRET_VALUE.encode() not in b"".join(
            [v for _, v in (await redis.hgetall(f"{prefix}rows")).items()]
        )
