"""gRPC server reflection, ``grpc.reflection.v1`` and ``v1alpha``, with the protos' comments.

``make protos`` (``tools/gen_protos.py``) writes ``gen/electric/descriptor_set.pb``: every
proto with its imports and **source info** (``protoc --include_source_info``), i.e. the
comments. The reflection service answers from those file descriptors, so ``grpcurl
describe`` shows the comments written in the protos.

grpcio-reflection implements ``v1alpha`` only. ``v1`` has the same messages under another
package (identical on the wire), so the same servicer is also served as
``grpc.reflection.v1.ServerReflection``, and a ``grpc/reflection/v1/reflection.proto``
descriptor is derived from the ``v1alpha`` one for clients that describe it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import _async as reflection_aio
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

V1ALPHA_SERVICE = "grpc.reflection.v1alpha.ServerReflection"
V1_SERVICE = "grpc.reflection.v1.ServerReflection"
DESCRIPTOR_SET_NAME = "descriptor_set.pb"

_V1ALPHA_FILE = "grpc_reflection/v1alpha/reflection.proto"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def descriptor_set_path() -> Path | None:
    """Where ``make protos`` put the descriptor set (next to the generated ``electric``
    package), or None when it is missing."""
    try:
        import electric
    except ImportError:  # pragma: no cover - gen/ always exists where services run
        return None
    path = Path(str(electric.__file__)).parent / DESCRIPTOR_SET_NAME
    return path if path.exists() else None


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """The ``grpc.reflection.v1`` file, derived from the ``v1alpha`` one."""
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = _V1_FILE
    proto.package = "grpc.reflection.v1"
    old, new = ".grpc.reflection.v1alpha.", ".grpc.reflection.v1."
    for message in proto.message_type:
        for fd in message.field:
            if fd.type_name.startswith(old):
                fd.type_name = new + fd.type_name.removeprefix(old)
    for service in proto.service:
        for method in service.method:
            method.input_type = new + method.input_type.removeprefix(old)
            method.output_type = new + method.output_type.removeprefix(old)
    return proto


def _file_proto(descriptor: Any) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor.CopyToProto(proto)
    return proto


class DescriptorSource:
    """A descriptor pool built from the descriptor set, plus the raw file protos (with their
    source info) the reflection answers carry."""

    def __init__(self, files: Iterable[descriptor_pb2.FileDescriptorProto]) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        self.files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        extra = [
            _file_proto(health_pb2.DESCRIPTOR),
            _file_proto(reflection_pb2.DESCRIPTOR),
            _v1_file(),
        ]
        for proto in [*files, *extra]:
            if proto.name in self.files:
                continue
            self.pool.Add(proto)
            self.files[proto.name] = proto

    @classmethod
    def load(cls, path: Path | None = None) -> DescriptorSource:
        """From the descriptor set at ``path`` (default :func:`descriptor_set_path`); without
        one, from the generated modules' descriptors (no comments)."""
        path = path or descriptor_set_path()
        if path is not None:
            fds = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
            return cls(fds.file)
        return cls(())

    def serialized(self, name: str) -> bytes:
        """The serialized file proto ``name`` (with source info when the set had it)."""
        return self.files[name].SerializeToString()


class ReflectionServicer(reflection_aio.ReflectionServicer):  # type: ignore[misc]
    """grpcio-reflection's servicer answering file descriptors WITH source info."""

    def __init__(self, service_names: Iterable[str], source: DescriptorSource) -> None:
        super().__init__(service_names, pool=source.pool)
        self._source = source

    def _files_response(self, descriptor: Any, request: Any) -> Any:
        seen: dict[str, Any] = {}
        stack = [descriptor]
        while stack:
            d = stack.pop()
            if d.name in seen:
                continue
            seen[d.name] = d
            stack.extend(d.dependencies)
        protos = [
            self._source.serialized(name)
            if name in self._source.files
            else _file_proto(d).SerializeToString()
            for name, d in seen.items()
        ]
        return reflection_pb2.ServerReflectionResponse(
            file_descriptor_response=reflection_pb2.FileDescriptorResponse(
                file_descriptor_proto=protos
            ),
            original_request=request,
        )

    def _not_found(self, request: Any) -> Any:
        return reflection_pb2.ServerReflectionResponse(
            error_response=reflection_pb2.ErrorResponse(
                error_code=grpc.StatusCode.NOT_FOUND.value[0],
                error_message=grpc.StatusCode.NOT_FOUND.value[1],
            ),
            original_request=request,
        )

    def _file_by_filename(self, request: Any, filename: str) -> Any:
        try:
            descriptor = self._pool.FindFileByName(filename)
        except KeyError:
            return self._not_found(request)
        return self._files_response(descriptor, request)

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        try:
            descriptor = self._pool.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            return self._not_found(request)
        return self._files_response(descriptor, request)

    def _file_containing_extension(
        self, request: Any, containing_type: str, extension_number: int
    ) -> Any:
        try:
            message = self._pool.FindMessageTypeByName(containing_type)
            extension = self._pool.FindExtensionByNumber(message, extension_number)
            descriptor = self._pool.FindFileContainingSymbol(extension.full_name)
        except KeyError:
            return self._not_found(request)
        return self._files_response(descriptor, request)


@functools.cache
def _default_source() -> DescriptorSource:
    """The descriptor source of this process (read once; hosts of one process share it)."""
    return DescriptorSource.load()


def enable_reflection(
    server: grpc.aio.Server,
    service_names: Iterable[str],
    source: DescriptorSource | None = None,
) -> DescriptorSource:
    """Serve reflection v1 and v1alpha on ``server`` for ``service_names`` (the reflection
    services are added to the list); returns the descriptor source used."""
    source = source or _default_source()
    names = [*service_names, V1ALPHA_SERVICE, V1_SERVICE]
    servicer = ReflectionServicer(dict.fromkeys(names), source)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    handlers: dict[str, Any] = {
        "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
        )
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(V1_SERVICE, handlers),))
    return source
