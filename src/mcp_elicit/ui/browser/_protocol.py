"""The client kit's UI protocol, imported in one place: if it moves, only this file changes."""

from mcp_elicit.ui.base import (
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
