"""What a record costs the SQLite trail as the trail grows: record ids with the time first (what
ships) against random ids (UUID4, what shipped before), same run.

Run: .venv/bin/python bench/audit_growth.py [--records N] [--batch B] [--window W]

Two trails, one per kind of id, take turns of B records (default 200, about what the writer
thread merges at once), alternating which goes first. Each record is journaled on this thread
(`append_now`, as on the answer's path), then the batch is merged into the chain and the WAL
checkpointed when due (`maintain`, what the writer thread does), all timed with this thread's
CPU clock. Each row covers a window of W records per trail (default 10,000): µs per record for
journaling and for the merge with its checkpoints, and the write-ahead log's bytes per record
(frames appended, counted across checkpoints). Flat rows mean a record costs the same however
long the trail is.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import mcp_elicit.audit.sqlite as sqlite_sink
from _stats import conditions
from audit import events
from mcp_elicit.audit.base import new_record_id


def _uuid4_hex() -> str:
    return uuid.uuid4().hex


KINDS = {"time first (now)": new_record_id, "UUID4 (before)": _uuid4_hex}


def wal_frames(path: Path) -> tuple[bytes, int]:
    """(the log's salt, the frames written under it) of a SQLite write-ahead log. After a
    checkpoint the log starts over from its beginning under a new salt, leaving old frames
    behind it, so the valid frames are the leading ones carrying the header's salt: found by
    bisection (file format: sqlite.org/fileformat2.html, "WAL File Format")."""
    try:
        with open(path, "rb") as f:
            head = f.read(32)
            if len(head) < 32:
                return b"", 0
            page = int.from_bytes(head[8:12], "big")
            salt = head[16:24]

            def valid(i: int) -> bool:
                f.seek(32 + i * (24 + page) + 8)
                return f.read(8) == salt

            low, high = 0, max(0, (path.stat().st_size - 32) // (24 + page))
            while low < high:  # the first frame not under this salt
                mid = (low + high) // 2
                if valid(mid):
                    low = mid + 1
                else:
                    high = mid
            return salt, low * (24 + page)
    except FileNotFoundError:
        return b"", 0


class Trail:
    def __init__(self, path: Path) -> None:
        self.sink = sqlite_sink.SqliteAuditSink(path)
        self.wal = Path(f"{path}-wal")
        self.journal = self.merge = 0.0
        self.wal_bytes = 0
        self.records = 0

    def turn(self, kind: str, evs: list[Any]) -> None:
        sqlite_sink.new_record_id = KINDS[kind]
        t0 = time.thread_time()
        for e in evs:
            self.sink.append_now((e,))
        t1 = time.thread_time()
        self.sink.maintain()  # the merge, and the WAL checkpoint when due
        while self.sink.maintenance_after() == 0.0:
            self.sink.maintain()
        t2 = time.thread_time()
        self.journal += t1 - t0
        self.merge += t2 - t1
        self.records += len(evs)

    def logged(self, before: tuple[bytes, int]) -> None:
        """Count the log bytes written since `before` (another salt: the log started over)."""
        salt, size = wal_frames(self.wal)
        self.wal_bytes += size - before[1] if salt == before[0] else size

    def row(self) -> tuple[float, float, float]:
        n = max(self.records, 1)
        got = (self.journal / n * 1e6, self.merge / n * 1e6, self.wal_bytes / n)
        self.journal = self.merge = 0.0
        self.wal_bytes = self.records = 0
        return got


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--window", type=int, default=10_000)
    args = parser.parse_args()
    print(conditions())
    evs = events(args.records)
    with tempfile.TemporaryDirectory() as tmp:
        trails = {kind: Trail(Path(tmp) / f"{k}.sqlite3") for k, kind in enumerate(KINDS)}
        print(
            "| records in each trail | "
            + " | ".join(f"{k}: journal µs, merge µs, WAL B" for k in KINDS)
            + " |"
        )
        print("|---|" + "---|" * len(KINDS))
        for turn, start in enumerate(range(0, args.records, args.batch)):
            order = list(KINDS) if turn % 2 == 0 else list(reversed(KINDS))
            for kind in order:
                before = wal_frames(trails[kind].wal)
                trails[kind].turn(kind, evs[start : start + args.batch])
                trails[kind].logged(before)
            done = start + args.batch
            if done % args.window == 0 or done >= args.records:
                cells = []
                for kind in KINDS:
                    journal, merge, wal = trails[kind].row()
                    cells.append(f"{journal:.1f}, {merge:.1f}, {wal:,.0f}")
                print(f"| {done:,} | " + " | ".join(cells) + " |")
                sys.stdout.flush()
        for trail in trails.values():
            trail.sink.close()
    sqlite_sink.new_record_id = new_record_id


if __name__ == "__main__":
    main()
