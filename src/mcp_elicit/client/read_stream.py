"""A read stream that wraps another and passes on its `last_context` (the dispatcher runs handlers
in the sender's context, which is how a push over HTTP is tied to its call). Subclasses change
`receive`; the async-iterator and context-manager plumbing is written once here."""

from __future__ import annotations

from typing import Any, Self

import anyio

__all__ = ["WrappedReadStream"]


class WrappedReadStream:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
