"""One SDK client per event loop (``ClientPerLoop``), closed with its loop, and let go without a stray task.

A client's connections belong to its loop, so they must be closed on it, before it closes. There is no hook for
"this loop is ending", but there is one every well-ended loop runs: ``asyncio.run``, ``asyncio.Runner``,
pytest-asyncio and aiforge's own private loops call ``loop.shutdown_asyncgens()``, which closes every async
generator started on the loop. So each client comes with a small generator, started on its loop, whose
``finally`` closes the client: the connections end with their loop instead of leaking as unclosed sockets.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, Protocol, TypeVar


class _SDKClient(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_SDKClient)


class ClientPerLoop(Generic[C]):
    """One SDK client per running event loop, created on first use and reused for every call.

    An SDK client owns a connection pool bound to the loop that opened it: sharing it across
    loops (two ``asyncio.run`` calls, a Jupyter kernel loop and aiforge's background loop)
    fails with "Event loop is closed" or hangs. Clients of closed loops are dropped.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._clients: dict[asyncio.AbstractEventLoop, C] = {}
        self._closers: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        self._lock = threading.Lock()  # loops may live on different threads
        # Dropped with this object (a provider let go), each client is closed on its own loop, never another.
        weakref.finalize(self, _let_go, self._clients)

    def get(self) -> C:
        """The client of the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                self._drop_closed_loops()
                client = self._clients[loop] = self._factory()
                self._closers[loop] = _closed_with_the_loop(client)
            return client

    async def aclose(self) -> None:
        """Close the running loop's client; the next ``get`` makes a new one."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.pop(loop, None)
            closer = self._closers.pop(loop, None)
            self._drop_closed_loops()
        if closer is not None:
            await closer.aclose()  # closes the client
        elif client is not None:
            await client.close()

    def _drop_closed_loops(self) -> None:
        for loop in [loop for loop in self._clients if loop.is_closed()]:
            _forget(self._clients.pop(loop))
            self._closers.pop(loop, None)


def _closed_with_the_loop(client: _SDKClient) -> AsyncGenerator[None, None]:
    """A generator, started on the running loop, that closes ``client`` when the loop shuts its generators down."""

    async def closer() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await client.close()

    generator = closer()
    step = generator.asend(None)  # starting it registers it with the running loop (its first-iteration hook)
    try:
        step.send(None)
    except StopIteration:  # suspended at its yield, until the loop closes it
        pass
    return generator


def _let_go(clients: dict[asyncio.AbstractEventLoop, Any]) -> None:
    """The provider is dropped: ``_forget`` the clients of closed loops; an open loop's client its closer closes.

    Dropped with the provider, a closer hands its ``aclose`` to its own loop (asyncio's finaliser hook for
    generators), which closes the client there; a closed loop can close nothing, so its client is only forgotten.
    """
    for loop, client in list(clients.items()):
        if loop.is_closed():
            _forget(client)


def _forget(client: Any) -> None:
    """Mark the HTTP client of an SDK client of another loop as closed, so dropping it schedules nothing.

    Its connections belong to their loop (gone with it, when it is closed). Dropped as it is, the SDK's
    ``__del__`` would hand their closing to whichever loop runs then (a second ``asyncio.run``), where it
    fails: "Task exception was never retrieved ... Event loop is closed" on the user's stderr. httpx keeps
    that state in ``_state``.
    """
    http = getattr(client, "_client", None)
    state = getattr(http, "_state", None)
    closed = getattr(type(state), "CLOSED", None)
    if http is not None and closed is not None:  # a closed state implies the client holding it
        http._state = closed
