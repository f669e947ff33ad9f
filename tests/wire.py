"""Validate what the project puts on the wire against the official JSON schema of each revision.

    from tests.wire import validate_wire
    validate_wire("2025-11-25", "ElicitRequestFormParams", params)   # raises jsonschema.ValidationError

`definition` is a definition name of that revision's schema file (`$defs` or `definitions`), one of
the aliases below, or a JSON pointer into the file (`"#/$defs/ElicitResult/properties/content"`).
The whole file is the resolver root, so `$ref`s inside a definition resolve as in the spec.

The files live in the repository's `spec/` folder (copies of the published files, source named in
`spec/README.md`); `MCP_ELICIT_SPEC_DIR` points the tests at another copy.
`require_spec()` skips the calling test with a clear reason when the folder is absent.

Known generator artifacts are patched explicitly (see `KNOWN_ARTIFACTS`); pass `patched=False` to
validate against the file exactly as published.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

__all__ = ["KNOWN_ARTIFACTS", "require_spec", "schema_file", "spec_dir", "validate_wire"]

REVISIONS = ("2025-06-18", "2025-11-25", "2026-07-28")

# 2025-06-18 has no ElicitRequestParams definition: the params are inline in ElicitRequest, and
# there is only the form mode. The aliases let one test loop over every revision.
_ALIASES: dict[str, dict[str, str]] = {
    "2025-06-18": {
        "ElicitRequestParams": "#/definitions/ElicitRequest/properties/params",
        "ElicitRequestFormParams": "#/definitions/ElicitRequest/properties/params",
        "requestedSchema": "#/definitions/ElicitRequest/properties/params/properties/requestedSchema",
    },
    "2025-11-25": {
        "requestedSchema": "#/$defs/ElicitRequestFormParams/properties/requestedSchema",
    },
    "2026-07-28": {
        "requestedSchema": "#/$defs/ElicitRequestFormParams/properties/requestedSchema",
    },
}


def _defs_key(root: dict[str, Any]) -> str:
    return "$defs" if "$defs" in root else "definitions"


def _number_answers(root: dict[str, Any]) -> None:
    """F3: ElicitResult.content says ["string", "integer", "boolean"], but schema.ts says number.

    The generator turned `number` into `integer`; the conformance suite itself sends 95.5. Answers
    to `type: "number"` fields are fractional, so validate them against what schema.ts means.
    """
    content = root[_defs_key(root)]["ElicitResult"]["properties"]["content"]["additionalProperties"]
    scalar = content["anyOf"][1] if "anyOf" in content else content
    scalar["type"] = ["number" if t == "integer" else t for t in scalar["type"]]


# Every deviation of the published files from schema.ts that tests work around, with its reason.
KNOWN_ARTIFACTS: tuple[Callable[[dict[str, Any]], None], ...] = (_number_answers,)


def spec_dir() -> Path | None:
    """The folder with schema-<revision>.json, or None when it cannot be found."""
    override = os.environ.get("MCP_ELICIT_SPEC_DIR")
    if override:
        path = Path(override)
        return path if path.is_dir() else None
    candidate = Path(__file__).resolve().parents[1] / "spec"
    return candidate if (candidate / "schema-2025-11-25.json").is_file() else None


def require_spec() -> Path:
    """The spec folder, or skip the calling test saying where it was looked for."""
    found = spec_dir()
    if found is None:
        pytest.skip(
            "official MCP JSON schemas not found: expected spec/schema-<revision>.json in the "
            "repository or MCP_ELICIT_SPEC_DIR"
        )
    return found


def schema_file(revision: str) -> dict[str, Any]:
    """The published schema of `revision`, parsed (a fresh copy; skips when absent)."""
    return copy.deepcopy(_load(revision, patched=False))


@functools.cache
def _load(revision: str, *, patched: bool) -> dict[str, Any]:
    if revision not in REVISIONS:
        raise ValueError(f"no schema file for revision {revision!r}")
    path = require_spec() / f"schema-{revision}.json"
    root: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if patched:
        for patch in KNOWN_ARTIFACTS:
            patch(root)
    return root


@functools.cache
def _validator(revision: str, definition: str, patched: bool) -> Any:
    root = _load(revision, patched=patched)
    pointer = _ALIASES.get(revision, {}).get(definition, definition)
    if not pointer.startswith("#/"):
        defs = root[_defs_key(root)]
        if definition not in defs:
            raise KeyError(f"{definition!r} is not a definition of schema-{revision}.json")
        pointer = f"#/{_defs_key(root)}/{definition}"
    uri = f"urn:mcp-spec:{revision}:{'patched' if patched else 'published'}"
    registry: Registry[Any] = Registry().with_resource(uri, Resource.from_contents(root))
    cls = jsonschema.validators.validator_for(root)
    return cls({"$ref": f"{uri}{pointer}"}, registry=registry)


def validate_wire(revision: str, definition: str, instance: Any, *, patched: bool = True) -> None:
    """Raise jsonschema.ValidationError unless `instance` is valid for `definition` in `revision`."""
    _validator(revision, definition, patched).validate(instance)
