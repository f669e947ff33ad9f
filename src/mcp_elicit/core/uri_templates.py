"""Whether a URI could come from a resource template (RFC 6570): how a gateway finds the upstream
that serves a `resources/read` of a templated URI.

`template_matches("notes://{topic}", "notes://birds")` is True. The check answers "could this
template have expanded to this URI", as the MCP SDKs do when they route a read: a simple `{x}`
stands for one or more characters other than `/`, `?` and `#` (one path segment); `{+x}` and
an exploded `{x*}` for one or more of any character (FastMCP's multi-segment wildcard); the
operators `{#x}`, `{.x}`, `{/x}`, `{;x}`, `{?x}` and `{&x}` for nothing, or their character
followed by what they expand to (`.`, `/` and `;` repeat for lists: `{/path*}` is `/a/b`). An
unclosed `{` is a literal character.

It runs in time proportional to the template's length times the URI's (the template becomes a
small automaton, simulated one URI character at a time), whatever the template: a URI sent by a
client cannot make a template from an upstream slow to match, as a backtracking regex could.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["template_matches"]

_ANY = ""  # an expression class that excludes nothing
_SEGMENT = "/?#"  # what a simple expression never contains
_QUERY = "#"  # a query expression runs until the fragment
_REPEATING = frozenset("./;")  # operators whose lists repeat the operator character


@dataclass(frozen=True)
class _Expression:
    prefix: str  # the operator's character ("" for simple and reserved expressions)
    excluded: str  # characters the expansion never contains
    repeats: bool  # the prefix may come again inside (a list: `/a/b`)

    def takes(self, char: str) -> bool:
        return char not in self.excluded


_Node = str | _Expression  # a literal character or an expression


def _expression(body: str) -> _Expression:
    operator = body[:1]
    explode = body.endswith("*")
    if operator == "+":
        return _Expression("", _ANY, False)
    if operator == "#":
        return _Expression("#", _ANY, False)
    if operator in ("?", "&"):
        return _Expression(operator, _QUERY, False)
    if operator in _REPEATING:
        return _Expression(operator, _SEGMENT, True)
    return _Expression("", _ANY if explode else _SEGMENT, False)


def _compile(template: str) -> tuple[_Node, ...]:
    nodes: list[_Node] = []
    at = 0
    while at < len(template):
        end = template.find("}", at + 1) if template[at] == "{" else -1
        if end == -1:  # a literal character (an unclosed brace is one too)
            nodes.append(template[at])
            at += 1
            continue
        nodes.append(_expression(template[at + 1 : end]))
        at = end + 1
    return tuple(nodes)


# A state: (node index, inside). `inside` is True once an expression consumed its first character
# (its prefix, or a character of its value for one without a prefix).
_State = tuple[int, bool]


def _closure(nodes: tuple[_Node, ...], states: set[_State]) -> set[_State]:
    """Add the states reachable without reading: past an expression that may stay empty or that
    has read something already."""
    todo = list(states)
    while todo:
        index, inside = todo.pop()
        node = nodes[index] if index < len(nodes) else None
        if isinstance(node, _Expression) and (inside or node.prefix):
            following = (index + 1, False)
            if following not in states:
                states.add(following)
                todo.append(following)
    return states


def _step(nodes: tuple[_Node, ...], states: set[_State], char: str) -> set[_State]:
    found: set[_State] = set()
    for index, inside in states:
        if index >= len(nodes):
            continue
        node = nodes[index]
        if isinstance(node, str):
            if node == char:
                found.add((index + 1, False))
        elif inside:
            if node.takes(char) or (node.repeats and char == node.prefix):
                found.add((index, True))
        elif (node.prefix and char == node.prefix) or (not node.prefix and node.takes(char)):
            found.add((index, True))
    return _closure(nodes, found)


def template_matches(template: str, uri: str) -> bool:
    """True when `template` (an RFC 6570 URI template) could have expanded to `uri`."""
    nodes = _compile(template)
    states = _closure(nodes, {(0, False)})
    for char in uri:
        states = _step(nodes, states, char)
        if not states:
            return False
    return (len(nodes), False) in states  # every set of states here is closed already
