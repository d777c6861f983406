"""The wallet's event consumers: none.

The wallet consumes no events. It is called over gRPC by the services that move money
(registration, payout) with caller-chosen transfer ids, so every call is
idempotent and no event of another service has to reach it. Its own facts
(``electric.wallet.events``) are published through the shared event path's outbox relay
(:mod:`.app`). Should the wallet ever consume a topic, its handlers go here, registered by
payload type on the shared consumer worker, like the other services'.
"""
