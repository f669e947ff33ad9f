"""Forms, front door: the model, building forms from Python types, parsing untrusted schemas.

The model lives in `form_model` (a leaf), the wire shape in `wire_schema`, the answer checks in
`answers`, building from Python types in `_python_types` and parsing in `_schema_parser`; this
module only gathers them.

A `Form` is a flat tuple of `Field`s (spec F1). Each field is one of the shapes the spec defines
(F2): a string (optionally with a `format` and length bounds), a number or integer (with bounds), a
boolean, a single select or a multi select (options optionally titled). Nothing else exists here,
so a form can only ever produce a spec-valid `requestedSchema`.

Three ways in:

- `form_of(tp)` builds a form from a pydantic model, a dataclass or a TypedDict, refusing at
  definition time (`FormDefinitionError(field, construct)`) anything the spec cannot express;
- `Form(fields=(Field.string("name"), ...))` builds one by hand;
- `parse_schema(schema)` parses an incoming, untrusted `requestedSchema` and refuses any deviation
  (`SchemaError(problems)`); `schema_problems(schema)` returns the same list without raising.

And three ways out: `Form.to_wire(revision)` (the `requestedSchema`), `Form.validate(content)`
(answers, see `mcp_elicit.core.answers`), `Form.build(values)` (the caller's own type).

Stricter than the spec, on purpose:

- `pattern`, exclusive bounds, `multipleOf` and every other keyword outside F2 are refused;
- a default must satisfy its own field's constraints;
- a select has at least one option, no duplicates, and its options are either all titled or none;
- the sizes in `mcp_elicit.core.limits` apply to every form, built or parsed.

An empty form (no fields) is legal in the spec and here. `confirm` does not use one: it asks a
single boolean field, so the person's answer is an explicit value in the content (and in the
audit record) rather than an accept of nothing.

Revision 2025-06-18 can express neither multi selects nor non-boolean defaults: `to_wire` drops
those defaults (the server still applies them when it validates) and raises
`UnsupportedInRevision` for a multi select.

Constructs named by `FormDefinitionError.construct` (stable strings):

| construct | meaning |
|---|---|
| `name` | empty field name, too long, or with control/format/line-break or hidden characters |
| `kind` | not one of the six field kinds |
| `required` | not a bool |
| `title`, `description` | not a string, or longer than the limit |
| `format`, `min_length`, `max_length` | on a non-string field, or an invalid value / min > max |
| `minimum`, `maximum` | on a non-number field, not a finite number, or min > max |
| `min_items`, `max_items` | on a non-multi-select field, invalid, min > max or min > options |
| `options` | no options, too many, a value with hidden characters, or options on a non-select field |
| `duplicate option` | two options with the same value |
| `option titles` | some options titled and some not, or titles on an untitled select |
| `titled`, `legacy_enum_names` | the flag on a field kind that cannot carry it |
| `default` | a default the field itself would refuse, two defaults, or a default factory that fails |
| `duplicate field`, `too many fields`, `fields` | form-level problems |
| `pattern` | a regular expression constraint (not in the spec's schema) |
| `exclusive bound` | `gt`/`lt` (the spec has only inclusive `minimum`/`maximum`) |
| `multiple_of`, `decimal places` | numeric constraints the spec lacks |
| `union` | a union other than `Optional[X]` |
| `nested model` | a pydantic model, dataclass or TypedDict as a field type |
| `non-string enum`, `non-string literal` | options that are not strings |
| `list item type` | a list/set of anything but an Enum or Literal of strings |
| `tuple`, `dict`, `bytes`, `Any` | container and catch-all types the spec lacks |
| `unsupported type` | any other annotation |
| `alias`, `InitVar`, `unresolvable annotation`, `not a form type` | definition problems |
"""

from __future__ import annotations

from mcp_elicit.core._python_types import form_of
from mcp_elicit.core._schema_parser import parse_schema, schema_problems
from mcp_elicit.core.annotations import Meta, TitledEnum, Titles
from mcp_elicit.core.form_model import FORMATS, KINDS, Field, FieldKind, Form, Option, StringFormat
from mcp_elicit.core.sentinels import MISSING

FormField = Field
"""The name `Field` has at the top level (`mcp_elicit.FormField`), where `Field` would shadow pydantic's."""

__all__ = [
    "FORMATS",
    "KINDS",
    "MISSING",
    "Field",
    "FieldKind",
    "Form",
    "FormField",
    "Meta",
    "Option",
    "StringFormat",
    "TitledEnum",
    "Titles",
    "form_of",
    "parse_schema",
    "schema_problems",
]
