"""The webhook listener's connection policy: its limits, timeouts and slots, and who gives a slot up.

:mod:`._listener` parses and answers the requests (h11); this module decides how many connections it
holds and for how long: the head and body timeouts, the line and head caps, the admission slots of
connections waiting for their head (a newcomer takes the slot of the busiest address's oldest one),
the authenticated slots, and the bounded lingering after a refusal.

Why deliveries are not starved by a flood of connections that send nothing (or too little), from one
address or many (the steps are those :mod:`._listener` lists): such connections never reach step 4,
so the authenticated slots are a reserve that only the secret opens; and they cannot keep a new
connection out of step 2 either, because admission never refuses the newcomer: it closes the
longest-waiting connection of the busiest client address. Documenso sends its whole request head at
once, so its connection completes step 2 within milliseconds of being accepted; to push it out, a
flood would have to open ``max_connections`` new connections in that moment. Idle connections cost
one slot each for at most the head timeout, and the slots bound what the listener holds: at most
``max_connections`` waiting heads (each at most :data:`MAX_HEAD_BYTES`), ``max_connections`` bodies
and ``max_connections`` lingering refusals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Generic, Protocol, TypeVar

__all__ = [
    "BODY_TIMEOUT",
    "DEFAULT_HEAD_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "LINGER_BYTES",
    "LINGER_SECONDS",
    "MAX_HEAD_BYTES",
    "MAX_LINE_BYTES",
    "ConnectionPolicy",
]

# The listener's own logger: its lines keep one name, whichever module writes them.
log = logging.getLogger("airflow_provider_docsign.triggers._listener")

#: Seconds a client may take, from its connection, to send its request line and headers (Documenso
#: sends them at once); then it is answered 408 and closed, and its slot is free.
DEFAULT_HEAD_TIMEOUT = 2.0
#: Seconds an authenticated client may take to send its body (the service itself gives up after 10 s).
BODY_TIMEOUT = 10.0
#: The longest request or header line, CRLF included.
MAX_LINE_BYTES = 8 * 1024
#: The request line and all headers together.
MAX_HEAD_BYTES = 32 * 1024
#: Connections waiting for their request head (a new one takes the place of the oldest of the busiest
#: address), and, separately, authenticated requests reading their bodies (503 above).
DEFAULT_MAX_CONNECTIONS = 64
#: After a refusal with the body unread, read and discard at most this much (and for at most
#: :data:`LINGER_SECONDS`) before closing, so that the client reads the answer instead of a reset.
LINGER_BYTES = 64 * 1024
LINGER_SECONDS = 1.0
_READ_CHUNK = 64 * 1024


class _Waiting:
    """A connection whose request head is not complete yet: it holds one admission slot."""

    __slots__ = ("evicted", "peer", "transport")

    def __init__(self, peer: str, transport: asyncio.WriteTransport) -> None:
        self.peer = peer
        self.transport = transport
        self.evicted = False


def _peer(writer: asyncio.StreamWriter) -> str:
    """The client's address (without its port): connections are counted per address."""
    peername = writer.get_extra_info("peername")
    return str(peername[0]) if isinstance(peername, tuple) and peername else "?"


class _Limits(Protocol):
    """What a subscription asks of the listener: its slots and its head timeout."""

    max_connections: int
    head_timeout: float


_Sub = TypeVar("_Sub", bound=_Limits)


class ConnectionPolicy(Generic[_Sub]):
    """The slots and limits of a listener whose subscriptions are ``_Sub`` (the largest limit wins)."""

    def __init__(self) -> None:
        self._subs: dict[_Sub, None] = {}
        # Connections waiting for their head, oldest first (insertion order), and authenticated ones.
        self._waiting: dict[_Waiting, None] = {}
        self._authenticated = 0
        self._lingering = 0
        #: Requests answered, by status (for tests and operators' curiosity).
        self.answered: dict[int, int] = {}

    @property
    def max_connections(self) -> int:
        """The slots of each kind: the largest number any subscription asks for."""
        return max((s.max_connections for s in self._subs), default=DEFAULT_MAX_CONNECTIONS)

    @property
    def head_timeout(self) -> float:
        """Seconds a connection may take to send its request head: the largest any subscription allows."""
        return max((s.head_timeout for s in self._subs), default=DEFAULT_HEAD_TIMEOUT)

    @property
    def waiting(self) -> int:
        """Connections waiting for their request head now."""
        return len(self._waiting)

    @property
    def authenticated(self) -> int:
        """Authenticated requests whose body is being read now."""
        return self._authenticated

    def _admit(self, writer: asyncio.StreamWriter, evicted: bytes) -> _Waiting:
        """Give a new connection a slot, taking one from a waiting connection when all are taken.

        :param writer: The new connection.
        :param evicted: The answer (503) a waiting connection gets when it gives its slot up.
        """
        if len(self._waiting) >= self.max_connections:
            # The oldest connection of the address that holds the most slots gives its slot up.
            held = Counter(w.peer for w in self._waiting)
            most = max(held.values())
            victim = next(w for w in self._waiting if held[w.peer] == most)
            del self._waiting[victim]
            victim.evicted = True
            self.answered[503] = self.answered.get(503, 0) + 1
            log.debug("Docsign webhook listener: a connection from %s gave its slot up (503)", victim.peer)
            with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                victim.transport.write(evicted)
                victim.transport.close()
        waiting = _Waiting(_peer(writer), writer.transport)
        self._waiting[waiting] = None
        return waiting

    async def _linger(self, reader: asyncio.StreamReader) -> None:
        """Discard what the client still sends, briefly and boundedly, so it reads our answer."""
        if self._lingering >= self.max_connections:
            return  # under a flood, close at once: the client may see a reset instead of the answer
        self._lingering += 1
        try:
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError, ConnectionError, OSError):
                await asyncio.wait_for(_discard(reader, LINGER_BYTES), LINGER_SECONDS)
        finally:
            self._lingering -= 1


async def _discard(reader: asyncio.StreamReader, limit: int) -> None:
    discarded = 0
    while discarded < limit:
        chunk = await reader.read(_READ_CHUNK)
        if not chunk:
            return
        discarded += len(chunk)
