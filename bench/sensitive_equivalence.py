"""Proof that the fast secret guard decides exactly as an earlier version of it.

Run: .venv/bin/python bench/sensitive_equivalence.py [--rev REV] [--examples N]

Loads core/sensitive.py as it was at git revision REV (default 17733be, before the fast path)
beside the current one and compares `classify_field` and `classify_schema` on: every rule and
benign phrase in six naming styles and five places, with every meta word; every field of the test
tables; and N hypothesis-generated fields and forms with messages. Prints the counts compared and
exits 1 on the first difference. The one deliberate change since 17733be, the message rules
(`secret_in_message`, docs/guardrails.md step 6), may only raise a form's verdict; such forms are
counted apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_elicit.core import sensitive as new
from mcp_elicit.core.verdicts import VERDICTS

ROOT = Path(__file__).resolve().parent.parent


def load_old(rev: str) -> Any:
    source = subprocess.run(
        ["git", "show", f"{rev}:src/mcp_elicit/core/sensitive.py"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_sensitive.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("old_sensitive", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_sensitive"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="17733be")
    parser.add_argument("--examples", type=int, default=20_000)
    args = parser.parse_args()
    old = load_old(args.rev)
    sys.path.insert(0, str(ROOT))
    from tests.core import test_sensitive as tables
    from tests.core.test_sensitive_fast_path import _schemas, _styles, _text

    count = 0

    def same(name: str, schema: Any) -> None:
        nonlocal count
        a, b = old.classify_field(name, schema), new.classify_field(name, schema)
        if (a.name, a.verdict, a.reasons) != (b.name, b.verdict, b.reasons):
            sys.exit(f"DIFFERENT for {name!r} {schema!r}: old {a}, new {b}")
        count += 1

    for phrase in [r.phrase for r in new.RULES if "flag" not in r.where] + list(new.BENIGN_PHRASES):
        for text in _styles(phrase):
            for schema in (
                {"type": "string"},
                {"type": "string", "title": text},
                {"type": "string", "description": f"Please enter your {text} here."},
                {"type": "string", "description": f"We never ask for your {text}."},
                {"type": "string", "format": text},
                {"type": "boolean"},
                {"type": "string", "enum": ["a"]},
            ):
                same(text, schema)
        for meta in sorted(new.META_WORDS):
            same(f"{phrase}_{meta}".replace(" ", "_"), {"type": "string"})
    tabled = [*tables.SECRET_FIELDS, *tables.BENIGN_FIELDS, *tables.WARN_FIELDS]
    for name, schema, _ in tabled:
        same(name, schema)
    print(f"rule and benign phrases, test tables: {count:,} fields, all the same")

    forms = 0

    @settings(
        max_examples=args.examples, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(st.dictionaries(_text, _schemas, max_size=5), st.one_of(st.none(), _text))
    def generated(properties: dict[str, Any], message: str | None) -> None:
        nonlocal forms
        for name, schema in properties.items():
            same(name, schema)
        form = {"type": "object", "properties": properties}
        a, b = old.classify_schema(form, message), new.classify_schema(form, message)
        if _changed_on_purpose(b, message):
            # The deliberate change since 17733be (docs/guardrails.md step 6): the message-only
            # rules add codes and `secret_in_message` raises fields; nothing is ever lowered.
            nonlocal changed
            assert VERDICTS.index(b.verdict) >= VERDICTS.index(a.verdict), (form, message)
            assert set(a.message_reasons) <= set(b.message_reasons), (form, message)
            changed += 1
        else:
            assert (a.verdict, a.message_reasons) == (b.verdict, b.message_reasons), (form, message)
        forms += 1

    changed = 0
    generated()
    print(
        f"with {args.examples:,} generated forms: {count:,} fields and {forms:,} forms, all the same "
        f"but {changed:,} raised on purpose by the message rules (never lowered)"
    )


def _changed_on_purpose(verdict: Any, message: str | None) -> bool:
    """A form the message-only rules or the `secret_in_message` rule touched."""
    if any("secret_in_message" in f.reasons for f in verdict.fields):
        return True
    rules = new._match_text(message, "message") if isinstance(message, str) else ()
    return any(rule.where == frozenset({"message"}) for rule in rules)


if __name__ == "__main__":
    main()
