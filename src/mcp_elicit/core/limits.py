"""Size limits on forms, as named constants.

The specification sets no limits, but a form is something a person reads and fills in, and the
client side parses it from an untrusted server. These bounds are far above any form a person would
fill in willingly and far below anything that could hurt a terminal, a browser page or the audit
trail. The same limits apply when this project builds a form (so it never emits a form its own
client would refuse) and when it parses one (so a hostile server cannot flood a user's screen).
docs/security.md lists every value.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ELICITATION_IDLE_TIMEOUT_SECONDS",
    "MAX_CLIENT_ERROR_CHARS",
    "MAX_COMBINING_MARKS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FIELDS",
    "MAX_FIELD_NAME_CHARS",
    "MAX_MESSAGE_CHARS",
    "MAX_OPTIONS",
    "MAX_OPTION_CHARS",
    "MAX_REASKS",
    "MAX_SERVER_NAME_CHARS",
    "MAX_STRING_LENGTH",
    "MAX_TITLE_CHARS",
    "MAX_WAITING_ELICITATIONS",
]

# Fields per form. Forms longer than a screen or two are abandoned by people; 64 leaves room for
# generated forms while keeping a hostile schema from producing an endless prompt.
MAX_FIELDS: Final = 64

# Options per single or multi select. The longest honest list is a country picker (249 ISO 3166
# codes); more than 256 cannot be read as a list and only serves to flood the screen.
MAX_OPTIONS: Final = 256

# Characters in a field name (a `properties` key). Names are identifiers, shown only when there is
# no title; 128 fits any identifier style including long aliases.
MAX_FIELD_NAME_CHARS: Final = 128

# Characters in an option value (an `enum` entry or a `const`). Values are identifiers too, shown
# when the option has no title.
MAX_OPTION_CHARS: Final = 256

# Characters in a title (of a field, an option or the form). A title is a label on one line;
# anything longer is prose and belongs in a description.
MAX_TITLE_CHARS: Final = 256

# Characters in a description (of a field or the form): a short paragraph of help text.
MAX_DESCRIPTION_CHARS: Final = 2_000

# Characters in the `message` of an elicitation request: a few paragraphs explaining why the
# server asks. Used by the request layers, kept here so every size limit lives in one file.
MAX_MESSAGE_CHARS: Final = 4_000

# Upper bound for `minLength`/`maxLength` in a field and for the length of any string answer.
# 64 Ki characters is more than any free-text answer typed into a form; a larger `maxLength` is
# absurd (no input widget honours it) and an unbounded answer could exhaust memory downstream.
MAX_STRING_LENGTH: Final = 65_536


# -- client side (the elicitation pipeline, mcp_elicit.client) ------------------------------------

# Combining marks kept on one character when text from a server is cleaned for display. Real
# scripts stack at most three or four (Vietnamese two, Tibetan and some Indic clusters up to four);
# more is "Zalgo" text that spills over the lines above and below, e.g. over the server's name.
MAX_COMBINING_MARKS: Final = 4

# Characters of a server's name, title or version (and of where it runs) shown with a prompt, after
# cleaning. An identity is a label on one line, like a title.
MAX_SERVER_NAME_CHARS: Final = 256

# Times an answer that fails validation goes back to the person before the question is cancelled.
# A UI should check each field as it is typed; a script that keeps producing invalid answers will
# not get better on the sixth try.
MAX_REASKS: Final = 5

# A question nobody answers for this long ends as `cancel` (C3: "timeout of the prompt"). Ten
# minutes is long enough to look something up and short enough that a forgotten prompt does not
# hold a server's tool call open for an afternoon. Per question shown; `ElicitationHandler` and
# `Pipeline` take an `idle_timeout` to change it.
ELICITATION_IDLE_TIMEOUT_SECONDS: Final = 600.0

# Questions that may wait for the UI while one is shown (one person answers one form at a time).
# Beyond this, new questions are cancelled at once instead of queueing without bound: a server that
# floods a client gets `cancel`, and the person is not buried under prompts (C4 rate-limit SHOULD).
MAX_WAITING_ELICITATIONS: Final = 16


# -- server side (the server kit, mcp_elicit.server) -----------------------------------------------

# Characters kept of the message of a JSON-RPC error a client answers a pushed request with
# (`ClientRefused.detail`), after cleaning it to one line: the model reads it in the tool's result.
# A validation error or a refusal's reason fits; a client's traceback or schema dump is cut.
MAX_CLIENT_ERROR_CHARS: Final = 500
