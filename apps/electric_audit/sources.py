"""Where ``electric-audit`` reads events from: service stores (read-only) and Kafka topics.

* A **store** is any service's database, given by its SQLAlchemy URL. It is opened
  read-only: SQLite through ``file:...?mode=ro`` (the file cannot be written, even by
  mistake), PostgreSQL in a ``READ ONLY`` transaction. Events are read in global-position
  order.
* A **topic** is a service's event topic (``electric.<service>.events``, prefixed by the
  namespace when one is given), read from offset 0 to the end offsets at call time.

Every event comes back as a :class:`Located` event: the envelope plus exactly where it was
found, so a failed check can name the store/topic, stream, version and position/offset.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import schema
from electric_eventlog.codec import envelope_from_row
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

#: The services whose topics are read by default with ``--kafka``.
SERVICES = ("registration", "table", "wallet", "payout")


class SourceError(Exception):
    """A source cannot be opened or read (bad URL, unreachable server): exit status 2."""


@dataclass(frozen=True)
class Located:
    """One event and where it was found."""

    envelope: Envelope
    #: ``store:<name>`` or ``topic:<name>``.
    source: str
    #: ``position <n>`` (store) or ``partition <p> offset <o>`` (topic).
    where: str
    #: Order within the source: the global position (store) or the read index (topic).
    order: int

    def location(self) -> str:
        """``<source> stream <id> version <v> <where>``: the exact place of this event."""
        e = self.envelope
        return f"{self.source} stream {e.stream_id} version {e.stream_version} {self.where}"


@dataclass
class Source:
    """Everything read from one store or one topic."""

    name: str
    kind: Literal["store", "topic"]
    events: list[Located] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.name}"


def _progress(total: int | None, desc: str) -> Any:
    """A tqdm bar on stderr when it is a terminal and tqdm is installed, else a no-op."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm ships with the dev requirements
        return _NoBar()
    return tqdm(total=total, desc=desc, unit="ev", disable=not sys.stderr.isatty(), file=sys.stderr)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def read_only_url(url: str) -> tuple[str, dict[str, Any]]:
    """The URL to open ``url`` read-only, and the connect arguments for it."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database or ""
        if path in ("", ":memory:"):
            raise SourceError(f"{url}: an in-memory database has nothing to audit")
        return f"sqlite:///file:{path}?mode=ro&uri=true", {"check_same_thread": False}
    return url, {}


def store_name(url: str) -> str:
    """A short name for a store: the SQLite file name or the PostgreSQL database name."""
    parsed = make_url(url)
    database = parsed.database or url
    return database.rsplit("/", 1)[-1]


def read_store(url: str, *, batch_size: int = 2000, name: str | None = None) -> Source:
    """Every event of the store at ``url``, in global-position order, opened read-only."""
    ro_url, connect_args = read_only_url(url)
    source = Source(name or store_name(url), "store")
    try:
        engine = create_engine(ro_url, connect_args=connect_args)
    except (SQLAlchemyError, ValueError, ImportError) as exc:
        raise SourceError(f"{url}: {exc}") from exc
    events = schema.events
    try:
        with engine.connect() as raw:
            conn = raw.execution_options(postgresql_readonly=True)
            total = conn.execute(select(func.count()).select_from(events)).scalar_one()
            bar = _progress(int(total), source.label)
            after = 0
            while True:
                query = (
                    select(events)
                    .where(events.c.global_position > after)
                    .order_by(events.c.global_position)
                    .limit(batch_size)
                )
                rows = list(conn.execute(query).mappings())
                for row in rows:
                    envelope = envelope_from_row(row)
                    position = envelope.global_position
                    source.events.append(
                        Located(envelope, source.label, f"position {position}", position)
                    )
                bar.update(len(rows))
                if len(rows) < batch_size:
                    break
                after = rows[-1]["global_position"]
            bar.close()
    except SQLAlchemyError as exc:
        raise SourceError(f"{url}: {exc.__class__.__name__}: {exc}") from exc
    finally:
        engine.dispose()
    return source


def located_from_messages(topic: str, messages: Iterable[Any]) -> Source:
    """A topic :class:`Source` from received messages (``ReceivedMessage``-like)."""
    source = Source(topic, "topic")
    for index, message in enumerate(messages):
        envelope = Envelope()
        envelope.ParseFromString(message.value)
        where = f"partition {message.partition} offset {message.offset}"
        source.events.append(Located(envelope, source.label, where, index))
    return source


async def _read_topics_async(bootstrap: str, namespace: str, topics: Iterable[str]) -> list[Source]:
    from electric_eventlog.kafka import KafkaBus

    bus = KafkaBus(bootstrap, client_id="electric-audit", namespace=namespace)
    sources = []
    for topic in topics:
        messages = []
        bar = _progress(None, f"topic:{topic}")
        async for message in bus.read_topic(topic):
            messages.append(message)
            bar.update()
        bar.close()
        sources.append(located_from_messages(topic, messages))
    return sources


def read_topics(
    bootstrap: str, namespace: str = "", services: Iterable[str] = SERVICES, timeout: float = 120
) -> list[Source]:
    """Every service topic from offset 0 (logical names; the namespace prefixes them)."""
    topics = [f"electric.{service}.events" for service in services]
    try:
        return asyncio.run(
            asyncio.wait_for(_read_topics_async(bootstrap, namespace, topics), timeout)
        )
    except SourceError:
        raise
    except Exception as exc:  # aiokafka raises many kinds: all are "cannot read"
        raise SourceError(f"kafka {bootstrap}: {exc.__class__.__name__}: {exc}") from exc


def all_events(sources: Iterable[Source]) -> Iterator[Located]:
    for source in sources:
        yield from source.events


def unique_events(
    sources: Iterable[Source], streams: Collection[str], seen: set[str] | None = None
) -> Iterator[Located]:
    """The events of ``streams`` in source order, each event id once (the first source that
    has it wins: a store and a topic hold the same event). ``seen`` carries the ids already
    taken across calls."""
    seen = set() if seen is None else seen
    for source in sources:
        for located in source.events:
            e = located.envelope
            if e.stream_id in streams and e.event_id not in seen:
                seen.add(e.event_id)
                yield located


def restrict(sources: Sequence[Source], streams: Collection[str]) -> list[Source]:
    """Each source with only the events of ``streams`` (for checks over whole streams)."""
    return [
        Source(s.name, s.kind, [x for x in s.events if x.envelope.stream_id in streams])
        for s in sources
    ]
