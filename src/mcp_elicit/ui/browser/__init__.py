"""The browser UI: questions, consent and waiting in a local page (`BrowserUI`), and a read-only
view of the consent audit trail (`audit_view`). One Starlette app each, Jinja2 templates with
autoescape, static CSS and JS; no SDK types."""

from mcp_elicit.ui.browser.app import BrowserUI
from mcp_elicit.ui.browser.questions import IDLE_TIMEOUT_SECONDS

__all__ = ["IDLE_TIMEOUT_SECONDS", "BrowserUI"]
