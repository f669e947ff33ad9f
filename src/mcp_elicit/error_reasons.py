"""The enumerations the error tree's `reason`-like fields take (errors.py exports them).

Each is a `StrEnum`, so a value still compares equal to its plain string. This module imports
nothing of the package (errors.py imports only it).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ArgumentProblem", "AuthProblem", "ConfigProblem", "StopReason", "VaultProblem"]


class StopReason(StrEnum):
    """Why a URL step (UrlHandoffStopped) could not go on."""

    DECLINED = "declined"  # the person declined on the consent or the waiting screen
    CANCELLED = "cancelled"  # the person cancelled
    REFUSED = "refused"  # the client refused the listed request
    TIMEOUT = "timeout"  # no completion in time
    ROUNDS_EXCEEDED = "rounds_exceeded"  # the server kept answering -32042
    REPEATED = "repeated"  # it asked again for a page already completed
    INVALID = "invalid"  # a malformed -32042


class VaultProblem(StrEnum):
    """Why a vault row does not decrypt (VaultError)."""

    UNKNOWN_KEY = "unknown_key"  # its key left the key ring
    TAMPERED = "tampered"  # wrong user or provider, edited, or copied from another row
    MALFORMED = "malformed"
    TOO_LARGE = "too_large"  # a value over the vault's size limit (refused before storing)


class AuthProblem(StrEnum):
    """Why the client is not let in to an MCP server (AuthorizationFailed): signing in with OAuth
    did not complete, or the server answered HTTP 401/403."""

    DENIED = "denied"  # the person or the authorization server refused (error=access_denied, ...)
    TIMEOUT = "timeout"  # nobody came back to the loopback callback in time
    BLOCKED_URL = "blocked_url"  # the authorization link failed the URL check: never opened
    FAILED = "failed"  # discovery, registration or the token exchange failed
    REFUSED = "refused"  # the server refused the credentials sent (a new token, an Authorization header)
    REQUIRED = "required"  # the server answered 401/403 to a request that carried no credentials


class ConfigProblem(StrEnum):
    """Why a setting cannot be used (ConfigError), where the error classifies it: so far a key
    given as hex, such as the consent trail's checkpoint key ($MCP_ELICIT_AUDIT_KEY)."""

    MISSING = "missing"  # not set, or empty
    NOT_HEX = "not_hex"  # a character that is not a hex digit
    ODD_LENGTH = "odd_length"  # an odd number of hex digits: not whole bytes
    TOO_SHORT = "too_short"  # fewer bytes than the key needs


class ArgumentProblem(StrEnum):
    """What is wrong with one argument of a tool call (ToolArgumentsError, a FieldProblem's code)."""

    MISSING = "missing"  # a required argument was not given
    WRONG_TYPE = "wrong_type"  # given, but not of the type the tool takes (a number for a string)
    UNEXPECTED = "unexpected"  # an argument the tool does not take (where it forbids others)
    INVALID = "invalid"  # of the right type, but outside what the tool accepts (a bound, a choice)
