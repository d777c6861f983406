"""Payload registry: protobuf type name -> message class, built from the descriptor pool.

Every generated module under the ``electric`` package is imported once so its messages are
in the default pool. Types this process does not know are kept as ``google.protobuf.Any``
and passed on untouched: decoding never drops an event.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from functools import cache

from google.protobuf import any_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

TYPE_URL_PREFIX = "type.googleapis.com/"


def type_name_of(message: Message) -> str:
    """Fully qualified type name of ``message``; for an ``Any``, the type it wraps."""
    if isinstance(message, any_pb2.Any):
        return message.type_url.rsplit("/", 1)[-1]
    return message.DESCRIPTOR.full_name


def pack(message: Message) -> any_pb2.Any:
    """Wrap ``message`` in an ``Any``; an ``Any`` is returned as a copy, never re-wrapped."""
    packed = any_pb2.Any()
    if isinstance(message, any_pb2.Any):
        packed.CopyFrom(message)
    else:
        # Deterministic so the stored bytes (and hence the hash) do not depend on map order.
        packed.type_url = TYPE_URL_PREFIX + message.DESCRIPTOR.full_name
        packed.value = message.SerializeToString(deterministic=True)
    return packed


class PayloadRegistry:
    """Maps fully qualified protobuf type names to message classes.

    Thread-safe; lookups of names not registered explicitly fall back to the descriptor pool.
    """

    def __init__(self, pool: descriptor_pool.DescriptorPool | None = None) -> None:
        self._pool = pool or descriptor_pool.Default()
        self._classes: dict[str, type[Message]] = {}
        self._lock = threading.Lock()

    def register(self, cls: type[Message]) -> None:
        """Register a message class explicitly (e.g. one built outside ``electric.*``)."""
        with self._lock:
            self._classes[cls.DESCRIPTOR.full_name] = cls

    def lookup(self, type_name: str) -> type[Message] | None:
        """The class for ``type_name``, or ``None`` when this process does not know it."""
        cls = self._classes.get(type_name)
        if cls is not None:
            return cls
        try:
            descriptor = self._pool.FindMessageTypeByName(type_name)
        except KeyError:
            return None
        cls = message_factory.GetMessageClass(descriptor)
        with self._lock:
            self._classes[type_name] = cls
        return cls

    def unpack(self, payload: any_pb2.Any) -> Message:
        """Decode ``payload`` into its message class; unknown types come back as the ``Any``."""
        cls = self.lookup(type_name_of(payload))
        if cls is None:
            return payload
        message = cls()
        message.ParseFromString(payload.value)
        return message


def import_generated(package: str = "electric") -> list[str]:
    """Import every ``*_pb2`` module under ``package`` so their types join the default pool."""
    imported: list[str] = []
    try:
        root = importlib.import_module(package)
    except ImportError:
        return imported
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if info.name.endswith("_pb2"):
            importlib.import_module(info.name)
            imported.append(info.name)
    return imported


@cache
def default_registry() -> PayloadRegistry:
    """The process-wide registry over every generated ``electric.*`` protobuf module."""
    import_generated("electric")
    return PayloadRegistry()
