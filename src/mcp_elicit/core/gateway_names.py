"""How a gateway names what it offers: `<server>__<tool>`, or the bare name when nothing collides.

Pure and stable: the same upstream listings always give the same names, whatever order the
servers answered in, so a model's saved tool names keep working across restarts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["SEPARATOR", "offered_names"]

SEPARATOR: Final = "__"


def offered_names(listings: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, str]]:
    """Offered name -> (server key, upstream name). A name offered by one server only stays bare;
    a name several servers offer, or one that looks like another's joined name, is joined."""
    names = {server: list(dict.fromkeys(items)) for server, items in listings.items()}
    counts = Counter(n for items in names.values() for n in items)
    joined = {f"{server}{SEPARATOR}{n}" for server, items in names.items() for n in items}
    offered: dict[str, tuple[str, str]] = {}
    for server in sorted(names):
        for name in names[server]:
            bare_ok = counts[name] == 1 and name not in joined
            key = name if bare_ok else f"{server}{SEPARATOR}{name}"
            while key in offered:  # "a__b" + "c" against "a" + "b__c": the later one is numbered
                key = f"{key}{SEPARATOR}2"
            offered[key] = (server, name)
    return offered
