"""The client kit: the elicitation pipeline behind the SDK's `elicitation_callback`.

- `ElicitClient` / `connect`: a connection to one server with the pipeline behind every question.
- `ElicitationHandler`: the pipeline as a bare SDK callback, for your own `mcp.client.Client`.
- `Pipeline` and its stages (`client/stages.py`): who asks, mode check, schema gate, clean text,
  ask the person, validate, answer; `Outcome` records what happened.
- `run_call` (one non-interactive tool call, what `mcp-elicit call` runs) is in `mcp_elicit.cli.call`:
  it picks a concrete UI, which the client package never imports.
- Guardrails (`client/guardrails.py`, `client/audit.py`): `SecretGuard` (in the default chain),
  the policy stages `install_guardrails` puts in, and the `AuditTrail` observer.
- OAuth (`client/oauth.py`): `OAuthLogin`, how `ElicitClient(oauth=...)` signs in to a server
  that requires it (the SDK's flow, a loopback callback, a 0600 token file).
- URL mode (`client/url.py`, `client/opener.py`): `UrlMode` (the `check_url` and URL-aware `ask`
  stages, the opener, completions, waiting and retries) and its `UrlSettings`.
"""

from __future__ import annotations

from mcp_elicit.client.audit import AuditTrail
from mcp_elicit.client.connection import PROTOCOLS, ElicitClient, ServerSpec, connect, parse_server_spec
from mcp_elicit.client.guardrails import AskFirst, Guardrails, PolicyGate, SecretGuard, install_guardrails
from mcp_elicit.client.model import CallRegistry, Decision, Elicitation, Outcome, Refuse, Reply
from mcp_elicit.client.oauth import OAuthLogin
from mcp_elicit.client.pipeline import SCREENING_STAGES, Pipeline
from mcp_elicit.client.sdk import ElicitationHandler, KitClient
from mcp_elicit.client.stages import (
    AnswerWithoutAsking,
    AskThroughUI,
    CheckMode,
    CleanText,
    GateSchema,
    Identify,
    Stage,
    default_stages,
)
from mcp_elicit.client.url import CheckUrl, UrlAsk, UrlMode, UrlSettings

__all__ = [
    "PROTOCOLS",
    "SCREENING_STAGES",
    "AnswerWithoutAsking",
    "AskFirst",
    "AskThroughUI",
    "AuditTrail",
    "CallRegistry",
    "CheckMode",
    "CheckUrl",
    "CleanText",
    "Decision",
    "ElicitClient",
    "Elicitation",
    "ElicitationHandler",
    "GateSchema",
    "Guardrails",
    "Identify",
    "KitClient",
    "OAuthLogin",
    "Outcome",
    "Pipeline",
    "PolicyGate",
    "Refuse",
    "Reply",
    "SecretGuard",
    "ServerSpec",
    "Stage",
    "UrlAsk",
    "UrlMode",
    "UrlSettings",
    "connect",
    "default_stages",
    "install_guardrails",
    "parse_server_spec",
]
