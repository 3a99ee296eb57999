"""The model SDKs' clients of a process, shared: one per (event loop, base URL, key), at most ``size``.

Every run of an organization's agents leases the same client, so they share one connection pool instead of
each opening its own.  Each SDK has its own pool (:class:`~agentfy.runtime.openai_compat.OpenAIClients`,
:class:`~agentfy.runtime.anthropic_messages.AnthropicClients`): a subclass of :class:`SdkClients` that only
names its client factory.  An SDK brings its own HTTP client, so the channels' ``httpx`` client cannot be
shared with it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class AsyncClient(Protocol):
    """What a pool needs of an SDK client: closing it (its connections)."""

    async def close(self) -> None: ...


C = TypeVar("C", bound=AsyncClient)


class SdkClients(Generic[C]):
    """Clients made by ``factory(base_url, api_key)``, at most ``size`` kept.

    A client is leased for one call (:meth:`lease`); the least recently used one beyond ``size`` is retired and
    closed once its last lease ends (never under a running call).  Keyed by the event loop too, because a
    client's connections belong to the loop that opened them.  :meth:`aclose` closes them all (shutdown)."""

    def __init__(self, size: int, *, factory: Callable[[str, str | None], C]) -> None:
        if size < 1:
            raise ValueError(f"size {size!r} must be at least 1 (clients kept)")
        self.size = size
        self._factory = factory
        self._clients: OrderedDict[tuple[int, str, str | None], _Entry[C]] = OrderedDict()

    def __repr__(self) -> str:  # never the keys
        return f"{type(self).__name__}({len(self._clients)} of {self.size})"

    def __len__(self) -> int:
        return len(self._clients)

    @asynccontextmanager
    async def lease(self, base_url: str, api_key: str | None) -> AsyncIterator[C]:
        loop = asyncio.get_running_loop()
        key = (id(loop), base_url, api_key)
        entry = self._clients.get(key)
        if entry is None or entry.loop is not loop:
            entry = self._clients[key] = _Entry(loop, self._factory(base_url, api_key))
        self._clients.move_to_end(key)
        retired = [self._clients.popitem(last=False)[1] for _ in range(len(self._clients) - self.size)]
        for old in retired:
            old.retired = True
            await old.close_if_idle()
        entry.leases += 1
        try:
            yield entry.client
        finally:
            entry.leases -= 1
            await entry.close_if_idle()

    async def aclose(self) -> None:
        """Close every client of the running loop; the others' loops are gone, so are their connections."""
        loop = asyncio.get_running_loop()
        entries, self._clients = list(self._clients.values()), OrderedDict()
        for entry in entries:
            if entry.loop is loop:
                await entry.client.close()


@dataclass(slots=True, eq=False)
class _Entry(Generic[C]):
    loop: asyncio.AbstractEventLoop
    client: C
    leases: int = 0
    retired: bool = False

    async def close_if_idle(self) -> None:
        if self.retired and self.leases == 0 and not self.loop.is_closed():
            await self.client.close()
