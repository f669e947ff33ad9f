"""The secret guard's tables (`core.sensitive`): which words, where, mean a field asks for a
secret, and which phrases and words around them take the alarm back. Data, not logic: each rule
says what it matches, where, how strongly, its stable reason code and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "BENIGN_PHRASES",
    "CONFIRMABLE_REASONS",
    "DELIVERY_WORDS",
    "GENERIC_FIELD_WORDS",
    "META_WORDS",
    "NEGATIONS",
    "RULES",
    "SECRET_MESSAGE_REASONS",
    "Rule",
    "Where",
]

Where = Literal["name", "title", "description", "message", "format", "flag"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One signal: a word sequence, where it counts, how strong it is, a stable reason code, why."""

    phrase: str  # words separated by single spaces, as produced by tokenize()
    where: frozenset[Where]
    level: Literal["warn", "block"]
    reason: str
    why: str
    head: bool = False  # in a name or title, match only as the last word


_LABEL: Final[frozenset[Where]] = frozenset({"name", "title"})
# Prose is a field's description and the form's message: every prose rule reads both.
_TEXT: Final[frozenset[Where]] = frozenset({"name", "title", "description", "message"})
_PROSE: Final[frozenset[Where]] = frozenset({"description", "message"})
_MESSAGE: Final[frozenset[Where]] = frozenset({"message"})
_FIELD_TEXT: Final[frozenset[Where]] = frozenset({"name", "title", "description"})
_HINT: Final[frozenset[Where]] = frozenset({"format"})
_FLAG: Final[frozenset[Where]] = frozenset({"flag"})


# The rule table, one row a signal: where it counts, how strong, its reason code and why, then the
# phrases that give it, in tokenize() form (lower case, words split, accents folded). The place
# "head": in a name or title, and only as its last word (the head noun).
_Row = tuple[tuple[frozenset[Where] | Literal["head"], Literal["warn", "block"], str, str], tuple[str, ...]]
_TABLE: Final[tuple[_Row, ...]] = (
    # -- passwords -------------------------------------------------------------------------------
    (
        (_TEXT, "block", "password", "a password grants access (F5 names it)"),
        ("password", "passwd", "passphrase", "pass phrase", "passcode", "passwort", "kennwort"),
    ),
    (
        (_TEXT, "block", "password", "'password' in Spanish, French, Portuguese, Dutch, Swedish, Polish"),
        ("contrasena", "mot de passe", "senha", "wachtwoord", "losenord", "haslo"),
    ),
    ((_LABEL, "block", "password", "usual abbreviations of password in names"), ("pwd", "pswd", "pw")),
    (("head", "block", "pin", "a PIN authorizes card payments and unlocks devices"), ("pin",)),
    (
        (_TEXT, "block", "pin", "a PIN authorizes card payments and unlocks devices"),
        ("pin code", "pin number", "personal identification number", "your pin", "atm pin"),
    ),
    # -- keys and secrets ------------------------------------------------------------------------
    (
        (_TEXT, "block", "api_key", "an API key grants access to an account (F5 names it)"),
        ("api key", "api token", "api secret", "access key", "secret key", "subscription key"),
    ),
    (
        (_TEXT, "block", "private_key", "whoever holds a private key can sign or decrypt as its owner"),
        ("private key", "signing key", "encryption key", "master key", "decryption key"),
    ),
    (
        (_TEXT, "block", "client_secret", "an OAuth client secret or shared secret authenticates its holder"),
        ("client secret", "app secret", "consumer secret", "shared secret", "webhook secret"),
    ),
    ((_TEXT, "block", "client_secret", "a shared secret"), ("signing secret", "secret token")),
    (("head", "block", "secret", "a field whose head noun is 'secret' asks for one"), ("secret",)),
    ((_PROSE, "warn", "secret", "prose mentioning a secret, context unknown"), ("secret",)),
    # -- tokens ----------------------------------------------------------------------------------
    (
        (_TEXT, "block", "access_token", "an access token is a credential (F5 names it)"),
        (
            "access token",
            "refresh token",
            "bearer token",
            "auth token",
            "authentication token",
            "session token",
            "id token",
            "oauth token",
            "bot token",
            "security token",
            "github token",
            "slack token",
            "npm token",
            "pypi token",
            "authorization header",
            "session cookie",
        ),
    ),
    (("head", "block", "access_token", "a JSON Web Token is a bearer credential"), ("jwt",)),
    (
        (
            _MESSAGE,
            "warn",
            "access_token",
            "a message asking for a personal access token ('PAT' alone is also a name: Pat)",
        ),
        ("your pat", "git hub pat", "git lab pat", "pat token"),
    ),
    (
        (
            _MESSAGE,
            "warn",
            "access_token",
            "'GitHub' reads as 'git hub' (camelCase); the field rule 'github token' serves names",
        ),
        ("git hub token", "git lab token", "hugging face token"),
    ),
    (
        (
            _MESSAGE,
            "warn",
            "token",
            "a message asking for 'your token' (not 'tokens': 'How many tokens may the summary use?')",
        ),
        ("your token", "the token", "a token", "this token"),
    ),
    (("head", "warn", "token", "a field named just 'token' likely wants a credential"), ("token",)),
    (("head", "warn", "token", "a cookie often carries a session"), ("cookie",)),
    # -- one-time and recovery codes -------------------------------------------------------------
    (
        (_TEXT, "block", "otp", "a one-time or second-factor code completes a login"),
        (
            "otp",
            "totp",
            "hotp",
            "one time password",
            "one time code",
            "one time passcode",
            "2 fa code",
            "mfa code",
            "two factor code",
            "verification code",
            "authenticator code",
            "authentication code",
            "auth code",
            "login code",
            "sms code",
            "authorization code",
            "authenticator app",
        ),
    ),
    (
        (
            _TEXT,
            "block",
            "recovery_code",
            "recovery codes and wallet seed phrases give full control of an account",
        ),
        ("recovery code", "backup code", "recovery key", "recovery phrase", "seed phrase", "mnemonic phrase"),
    ),
    ((_TEXT, "block", "recovery_code", "a wallet seed"), ("secret phrase", "wallet seed", "seed words")),
    (("head", "block", "recovery_code", "a field named 'mnemonic' is a wallet seed"), ("mnemonic",)),
    ((_LABEL, "warn", "otp", "second-factor wording without 'code'"), ("2 fa", "two factor", "mfa")),
    # -- payment ---------------------------------------------------------------------------------
    (
        (_TEXT, "block", "card_number", "a card number authorizes payments (F5: payment credentials)"),
        ("card number", "cc number", "card details", "primary account number"),
    ),
    (("head", "block", "card_number", "a field that is the credit card itself"), ("credit card",)),
    (("head", "block", "card_number", "a field that is the debit card itself"), ("debit card",)),
    (("head", "block", "card_number", "a field that is the payment card itself"), ("payment card",)),
    (
        (_TEXT, "block", "card_security_code", "the card security code exists only to authorize payments"),
        ("cvv", "cvc", "cvv 2", "cvc 2", "card verification", "card security code", "security code"),
    ),
    ((_LABEL, "block", "card_security_code", "card security code abbreviations"), ("csc", "ccv")),
    (("head", "warn", "card_number", "PAN is card jargon for the card number (also a tax id)"), ("pan",)),
    ((_TEXT, "block", "iban", "an IBAN is a payment credential for direct debits"), ("iban",)),
    (
        (_TEXT, "warn", "bank_account", "bank details: personal, sometimes enough to move money"),
        ("account number", "bank account", "routing number", "sort code", "aba number"),
    ),
    ((_TEXT, "warn", "card_expiry", "part of a card"), ("card expiry", "card expiration", "card exp")),
    # -- government ids --------------------------------------------------------------------------
    (
        (
            _TEXT,
            "block",
            "national_id",
            "national id numbers are used as authenticators and enable identity theft",
        ),
        (
            "ssn",
            "social security",
            "social insurance number",
            "national id",
            "national identity number",
            "national identification number",
            "national insurance number",
            "aadhaar",
            "id card number",
        ),
    ),
    (
        (_TEXT, "warn", "government_id", "identity document numbers: personal data, not credentials"),
        ("passport number", "driver license number", "drivers license number", "driving licence number"),
    ),
    ((_TEXT, "warn", "government_id", "tax ids are personal data"), ("tax id", "taxpayer id")),
    (("head", "warn", "national_id", "SIN is the Canadian social insurance number"), ("sin",)),
    # -- weak signals ----------------------------------------------------------------------------
    ((_TEXT, "warn", "credential", "wording about credentials"), ("credential", "credentials")),
    (("head", "warn", "auth", "a field named 'auth' likely wants a credential"), ("auth",)),
    (
        ("head", "warn", "auth", "a field named 'authorization' likely wants a header value"),
        ("authorization",),
    ),
    (("head", "warn", "key", "a field named just 'key' may want an API key"), ("key",)),
    ((_TEXT, "warn", "key", "a key"), ("ssh key", "license key", "product key", "gpg key", "pgp key")),
    (
        (_TEXT, "warn", "security_question", "answers to security questions reset passwords"),
        ("security question", "security answer", "secret question", "secret answer", "maiden name"),
    ),
    (
        (_LABEL, "warn", "connection_string", "connection strings usually embed a password"),
        ("connection string", "database url", "dsn"),
    ),
    # -- format-like hints (format, autocomplete, x-input-type, …) --------------------------------
    ((_HINT, "block", "format:password", "the schema itself marks a password input"), ("password",)),
    ((_HINT, "block", "format:current-password", "HTML autocomplete token"), ("current password",)),
    ((_HINT, "block", "format:new-password", "HTML autocomplete token"), ("new password",)),
    ((_HINT, "block", "format:one-time-code", "HTML autocomplete token"), ("one time code",)),
    ((_HINT, "block", "format:one-time-code", "one-time code hint"), ("otp",)),
    ((_HINT, "block", "format:cc-number", "HTML autocomplete token"), ("cc number",)),
    ((_HINT, "block", "format:cc-csc", "HTML autocomplete token"), ("cc csc",)),
    ((_HINT, "warn", "format:cc-exp", "HTML autocomplete token (cc-exp, -month, -year)"), ("cc exp",)),
    ((_HINT, "block", "format:secret", "a secret input hint"), ("secret",)),
    # -- flags: the keyword is present with the value true ---------------------------------------
    ((_FLAG, "block", "declared_sensitive", "the server declares the field sensitive"), ("x-sensitive",)),
    ((_FLAG, "block", "declared_sensitive", "the server declares the field secret"), ("x-secret",)),
    ((_FLAG, "warn", "write_only", "JSON Schema writeOnly: pydantic SecretStr emits it"), ("writeOnly",)),
)
RULES: Final[tuple[Rule, ...]] = tuple(
    Rule(phrase, _LABEL if where == "head" else where, level, reason, why, head=where == "head")
    for (where, level, reason, why), phrases in _TABLE
    for phrase in phrases
)

# The message names a secret (the form's only free-text fields are generic, or weak signals such
# as a field named 'token'; see core.sensitive): these reasons of the message's matches count. Every
# reason a block rule gives in prose, plus the prose words that alone are too vague for a field's
# description but not next to a field called "value": secret, credential, your token.
SECRET_MESSAGE_REASONS: Final[frozenset[str]] = frozenset(
    {r.reason for r in RULES if r.level == "block" and r.where & _PROSE} | {"secret", "credential", "token"}
)

# A free-text field whose name and title use only these words (and digits) says nothing about
# what it holds: the message says it. FastMCP's `ctx.elicit(message, str)` and a one-field model
# `value: str` both send {"value": {"type": "string", "title": "Value"}}. Kept short on purpose: a
# word here is one a server uses for "whatever the message asked", not for a kind of data.
GENERIC_FIELD_WORDS: Final[frozenset[str]] = frozenset(
    {
        "value",
        "input",
        "text",
        "answer",
        "response",
        "reply",
        "data",
        "string",
        "str",
        "entry",
        "field",
        "result",
    }
)

# A field's weak signals that a message naming a secret confirms: a field named 'token', 'key',
# 'auth' or 'credentials' under "Paste your GitHub token" is that token.
CONFIRMABLE_REASONS: Final[frozenset[str]] = frozenset({"token", "key", "auth", "credential"})

# Phrases that neutralise any match they overlap: talk about a secret, not a request for one.
BENIGN_PHRASES: Final[tuple[str, ...]] = (
    "reset password",
    "reset your password",
    "forgot password",
    "forgot your password",
    "change your password",
    "public key",
    "primary key",
    "foreign key",
    "sort key",
    "partition key",
    "composite key",
    "unique key",
    "shortcut key",
    "access key id",
    "key id",
    "token count",
    "token limit",
    "token budget",
    "token usage",
    "max token",
    "pin to",
    "pin it",
    "pin this",
    "pin the",
    "pin message",
    "secret santa",
    "library card",
    "loyalty card",
    "membership card",
    "last 4",
    "last four",
    "last 4 digits",
)

# A word right after a match makes it about the secret, not the secret: "password length",
# "api key name", "secret path", "pin policy". Applies in names, titles and prose.
META_WORDS: Final[frozenset[str]] = frozenset(
    {
        "age",
        "changed",
        "count",
        "created",
        "enabled",
        "expiration",
        "expiry",
        "expires",
        "file",
        "fingerprint",
        "id",
        "label",
        "last",
        "length",
        "location",
        "manager",
        "name",
        "path",
        "policy",
        "prefix",
        "protected",
        "provider",
        "requirements",
        "reset",
        "rotated",
        "rotation",
        "rules",
        "strength",
        "type",
    }
)

# In prose, one of these before a match in the same clause means "we won't ask for it" or "we
# will send it to you" rather than "type it here". Not "email" or "mail": as nouns they precede
# real requests ("your email and password").
NEGATIONS: Final[frozenset[str]] = frozenset({"not", "never", "no", "without", "don", "doesn", "won", "nor"})
DELIVERY_WORDS: Final[frozenset[str]] = frozenset(
    {"send", "sends", "sent", "text", "texts", "texted", "emailed", "emails", "receive", "deliver", "mailed"}
)

# Words ignored at the end of a name or title when looking for its head noun.
_TAIL_NOISE: Final[frozenset[str]] = frozenset(
    {"optional", "required", "value", "input", "field", "str", "string", "text", "here", "please"}
)

# Glued words that tokenize() splits: exact compounds (each phrase written together, "apikey"),
# then secret-ish endings (dbpassword).
_COMPOUNDS: Final[dict[str, tuple[str, ...]]] = {
    phrase.replace(" ", ""): tuple(phrase.split(" "))
    for phrase in (
        "api key",
        "access key",
        "secret key",
        "private key",
        "credit card",
        "debit card",
        "card number",
        "cc number",
        "security code",
        "pin code",
        "auth code",
        "otp code",
        "mfa code",
        "one time code",
        "account number",
        "routing number",
    )
}
_GLUED_HEADS: Final[tuple[str, ...]] = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
)

_HINT_KEYWORDS: Final[tuple[str, ...]] = (
    "format",
    "autocomplete",
    "x-autocomplete",
    "x-format",
    "x-input-type",
    "inputType",
    "x-widget",
    "x-ui-widget",
)
