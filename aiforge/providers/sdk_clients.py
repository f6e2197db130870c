"""One SDK client per event loop (``ClientPerLoop``), and clients of other loops let go without a stray task."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
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
        self._lock = threading.Lock()  # loops may live on different threads
        # Dropped with this object (a provider let go), clients of other loops must not be closed on this one.
        weakref.finalize(self, _forget_foreign, self._clients)

    def get(self) -> C:
        """The client of the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                self._drop_closed_loops()
                client = self._clients[loop] = self._factory()
            return client

    async def aclose(self) -> None:
        """Close the running loop's client; the next ``get`` makes a new one."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.pop(loop, None)
            self._drop_closed_loops()
        if client is not None:
            await client.close()

    def _drop_closed_loops(self) -> None:
        for loop in [loop for loop in self._clients if loop.is_closed()]:
            _forget(self._clients.pop(loop))


def _forget_foreign(clients: dict[asyncio.AbstractEventLoop, Any]) -> None:
    """``_forget`` every client but the running loop's, whose closing the SDK schedules on it, rightly."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    for loop, client in list(clients.items()):
        if loop is not running:
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
