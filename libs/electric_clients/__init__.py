"""electric_clients: what a caller needs to talk to the services, and nothing else.

Depends only on the generated protos and grpc (plus grpcio-status for error details):

- :mod:`.wallet` -- :class:`WalletClient`, the typed async client of the wallet;
- :mod:`.accounts` -- the wallet account ids shared by every service (house accounts);
- :mod:`.convert` -- the one proto-conversion module (money, cards, timestamps);
- :mod:`.errors` -- reading rich error details (``google.rpc.Status``) of a failed call;
- :mod:`.channel` -- channels with a gRPC service-config ``retryPolicy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from electric_clients.wallet import CallMetadata, WalletClient, insufficient_funds

__all__ = ["CallMetadata", "WalletClient", "insufficient_funds"]


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the grpc-free submodules (``accounts``, e.g. from the
    # wallet's pure ledger) does not import grpc through this package.
    if name in __all__:
        from electric_clients import wallet

        return getattr(wallet, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
