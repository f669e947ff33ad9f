"""The UI protocols, re-exported where UIs have always found them; they live in `client/ui_protocol.py`.

The client pipeline defines what it needs from a UI, so `client` never imports `ui`; every UI
(terminal, scripted, browser) implements these protocols.
"""

from mcp_elicit.client.ui_protocol import (
    FormPrompt,
    Purpose,
    Requester,
    UIResult,
    UrlCapableUI,
    UrlPrompt,
    UrlWaiting,
    UserInterface,
    WaitChoice,
)

__all__ = [
    "FormPrompt",
    "Purpose",
    "Requester",
    "UIResult",
    "UrlCapableUI",
    "UrlPrompt",
    "UrlWaiting",
    "UserInterface",
    "WaitChoice",
]
