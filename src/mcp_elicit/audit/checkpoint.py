"""Keyed checkpoints: what lets `verify` find a cut-off or re-chained tail on its own.

A hash chain proves the order of the records it holds, not that none were removed from its end
or that the tail was not rewritten and re-chained. After every append the sink writes a
checkpoint, ``(seq, hash)`` of the last record it committed, MAC'd with HMAC-SHA256 under a key
that is not stored with the trail (``$MCP_ELICIT_AUDIT_KEY``, hex). `verify` then requires the
record at that seq to be present with that hash: a truncated trail lacks it ("truncated"), a
re-chained tail has another hash there ("rewritten"), and without the key nobody can write a
checkpoint that matches a forged tail.

Keep the checkpoint file where whoever can edit the store cannot write (another host, another
user, a volume the database cannot reach). What it does not catch: someone who can write the
checkpoint file may put back an older genuine checkpoint and cut the trail after it; records
appended after the last checkpoint this writer made (another writer's) are not covered by it.

The same key signs the SQLite trail's journal lines (audit/journal.py) while a keyed sink writes
them: a line waits there, outside the chain, until it is merged, and without a MAC an edit of a
dead process's journal would be chained as written. A keyed merge takes only lines whose MAC
matches; any other line is refused (kept aside, never chained).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import string
import threading
from pathlib import Path
from typing import Final

from mcp_elicit.errors import AuditReadError, AuditWriteError, ConfigError

__all__ = [
    "CHECKPOINT_KEY_ENV",
    "MIN_CHECKPOINT_KEY_BYTES",
    "SIGNED_LINE_MARK",
    "Checkpoint",
    "checkpoint_key_from_env",
    "unsigned_line",
]

CHECKPOINT_KEY_ENV: Final = "MCP_ELICIT_AUDIT_KEY"

# HMAC-SHA256 keys shorter than its output weaken it; 32 bytes is the digest size.
MIN_CHECKPOINT_KEY_BYTES: Final = 32

_MAGIC: Final = "mcp-elicit-checkpoint/1"
_LINE_MAGIC: Final = b"mcp-elicit-journal-line/1 "
_NOT_A_CHECKPOINT: Final = "not a checkpoint"
# A signed journal line: this mark, the MAC (hex), a space, then the line as the sink made it.
SIGNED_LINE_MARK: Final = b"~"
_LINE_MAC_HEX: Final = 64

logger = logging.getLogger("mcp_elicit.audit")


def checkpoint_key_from_env() -> bytes:
    """The checkpoint key from ``$MCP_ELICIT_AUDIT_KEY`` (hex, whitespace ignored); ConfigError
    when it cannot be used, its `reason` a ConfigProblem: missing, not_hex, odd_length (not
    whole bytes), too_short (under MIN_CHECKPOINT_KEY_BYTES)."""
    digits = "".join(os.environ.get(CHECKPOINT_KEY_ENV, "").split())
    wanted = f"at least {MIN_CHECKPOINT_KEY_BYTES} bytes, {2 * MIN_CHECKPOINT_KEY_BYTES} hex digits"
    if not digits:
        raise ConfigError(
            CHECKPOINT_KEY_ENV, "is not set: the checkpoint's key (hex) is read from it", reason="missing"
        )
    if any(c not in string.hexdigits for c in digits):
        raise ConfigError(CHECKPOINT_KEY_ENV, f"must be hex digits only ({wanted})", reason="not_hex")
    if len(digits) % 2:
        raise ConfigError(
            CHECKPOINT_KEY_ENV,
            f"has an odd number of hex digits ({len(digits)}): a key is whole bytes, two digits"
            f" each ({wanted})",
            reason="odd_length",
        )
    key = bytes.fromhex(digits)
    if len(key) < MIN_CHECKPOINT_KEY_BYTES:
        raise ConfigError(
            CHECKPOINT_KEY_ENV, f"is {len(key)} bytes, too short: it needs {wanted}", reason="too_short"
        )
    return key


def unsigned_line(line: bytes) -> bytes:
    """A journal line without the signature in front of it, when it has one (not checked)."""
    if line[:1] == SIGNED_LINE_MARK and line[1 + _LINE_MAC_HEX : 2 + _LINE_MAC_HEX] == b" ":
        return line[2 + _LINE_MAC_HEX :]
    return line


class Checkpoint:
    """The last (seq, hash) a writer committed, in `path`, MAC'd with `key`."""

    def __init__(self, path: str | os.PathLike[str], key: bytes) -> None:
        if len(key) < MIN_CHECKPOINT_KEY_BYTES:
            raise ConfigError(
                CHECKPOINT_KEY_ENV, f"needs at least {MIN_CHECKPOINT_KEY_BYTES} bytes", reason="too_short"
            )
        self.path = Path(path)
        self._key = key
        self._lock = threading.Lock()
        self._last = 0  # the highest seq written by this handle: a slower thread never steps back

    def _mac(self, seq: int, digest: str) -> str:
        return hmac.new(self._key, f"{_MAGIC} {seq} {digest}".encode(), hashlib.sha256).hexdigest()

    def write(self, seq: int, digest: str, first: int = 1) -> None:
        """Replace the checkpoint atomically (write a temporary file, then rename it over), after
        a commit of the records `first` to `seq`.

        A file written under another key is never replaced (AuditWriteError, so the append fails
        closed): a writer given a wrong key would otherwise destroy the trail's anchor unnoticed.
        To rotate the key, start a new checkpoint file. Starting one on a trail that already held
        records (a key new to the trail, or a deleted file) is logged: until then `verify` of
        the keyed trail reported `no_checkpoint`."""
        line = f"{_MAGIC} {seq} {digest} {self._mac(seq, digest)}\n"
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with self._lock:
            if seq <= self._last:
                return
            if self._last == 0:  # this handle's first write: is the file there ours to replace?
                try:
                    self.require_key_of_file()
                except AuditReadError as exc:
                    raise AuditWriteError("checkpoint", str(self.path), exc.detail) from exc
                if first > 1 and not self.path.exists():
                    logger.warning(
                        "no audit checkpoint at %s though the trail held records up to #%d: starting"
                        " one (a key new to this trail, or the file was deleted)",
                        self.path,
                        first - 1,
                    )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(line, encoding="ascii")
                os.replace(tmp, self.path)
            except OSError as exc:
                raise AuditWriteError("checkpoint", str(self.path), str(exc)) from exc
            self._last = seq

    def read(self) -> tuple[int, str, bool] | None:
        """(seq, hash, genuine), None when no checkpoint was written yet.

        `genuine` is False when the MAC does not match the key: verify reports that as a break.
        """
        try:
            text = self.path.read_text(encoding="ascii")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise AuditReadError("checkpoint", str(self.path), str(exc)) from exc
        parts = text.split()
        if len(parts) != 4 or parts[0] != _MAGIC or not parts[1].isdigit():
            raise AuditReadError("checkpoint", str(self.path), _NOT_A_CHECKPOINT)
        seq, digest, mac = int(parts[1]), parts[2], parts[3]
        return seq, digest, hmac.compare_digest(mac, self._mac(seq, digest))

    def anchor(self) -> tuple[int, str, bool] | None:
        """What `verify` checks the trail against: `read`, except that a file which is there but
        is not a checkpoint (edited, emptied, replaced) is a forged one, ``(0, "", False)``, a
        `bad_checkpoint` break; only a file that cannot be read at all stops the verification."""
        try:
            return self.read()
        except AuditReadError as exc:
            if exc.detail != _NOT_A_CHECKPOINT:
                raise
            return 0, "", False

    def require_key_of_file(self) -> None:
        """AuditReadError when the checkpoint file exists and its MAC does not match this key (or
        it is not a checkpoint): a merge under another key than the writers' would refuse every
        line of their journals, so another process's journal is left for an opener with theirs."""
        found = self.read()
        if found is not None and not found[2]:
            raise AuditReadError(
                "checkpoint",
                str(self.path),
                f"written under another key than ${CHECKPOINT_KEY_ENV} (a wrong key, or one rotated"
                " without starting a new checkpoint file)",
            )

    def fits_file(self) -> bool:
        """False when the file is a checkpoint written under another key: lines signed with this
        key would be refused by its writers' merges. (A file that cannot be read is left to
        `write`, which fails closed after the merge that chains the lines.)"""
        try:
            found = self.read()
        except AuditReadError:
            return True
        return found is None or found[2]

    def sign_line(self, line: bytes) -> bytes:
        """A journal line with its MAC in front (over the line without its newline)."""
        return b"%b%b %b" % (SIGNED_LINE_MARK, self._line_mac(line.removesuffix(b"\n")), line)

    def signed_lines(self, lines: list[bytes], refused: list[bytes]) -> list[bytes]:
        """The lines whose MAC matches, with the MAC taken off; every other line (edited, signed
        under another key, not signed at all) is added to `refused`."""
        taken = []
        for line in lines:
            mac, rest = line[1 : 1 + _LINE_MAC_HEX], line[2 + _LINE_MAC_HEX :]
            good = line[:1] == SIGNED_LINE_MARK and line[1 + _LINE_MAC_HEX : 2 + _LINE_MAC_HEX] == b" "
            if good and hmac.compare_digest(mac, self._line_mac(rest.removesuffix(b"\n"))):
                taken.append(rest)
            else:
                refused.append(line)
        return taken

    def _line_mac(self, line: bytes) -> bytes:
        return hmac.digest(self._key, _LINE_MAGIC + line, "sha256").hex().encode("ascii")
