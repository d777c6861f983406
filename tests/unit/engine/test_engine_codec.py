"""Engine events and commands through the one dataclass codec (canonical JSON), over random
hands: the shared ``DataclassCodec`` the table service stores its events with."""

from __future__ import annotations

import random

import pytest
from electric_domain.holdem import (
    Bet,
    HoldemHand,
    Muck,
    RaiseTo,
    Show,
    commands,
    events,
    replay,
    state,
)
from electric_eventlog.dataclass_codec import CodecError, DataclassCodec

CODEC = DataclassCodec({"holdem": events, "holdem_state": state, "command": commands})


def test_events_round_trip_through_canonical_json() -> None:
    rng = random.Random(3)
    for k in range(60):
        n = rng.randint(2, 6)
        h = HoldemHand.start(
            [rng.choice((30, 500)) for _ in range(n)], k % n, 5, 10, 1, seed=bytes([k]) * 32
        )
        while not h.is_complete:
            la = h.legal_actions()
            assert la is not None
            if la.can_raise and rng.random() < 0.3:
                h.all_in()
            else:
                h.check() if la.can_check else h.call()
        encoded = [CODEC.encode(e) for e in h.events]
        tags = [tag for tag, _ in encoded]
        assert tags == [f"holdem.{type(e).__name__}" for e in h.events]
        back = [CODEC.decode(text) for _, text in encoded]
        assert back == h.events
        assert [CODEC.encode(e) for e in back] == encoded  # canonical: same bytes again
        assert replay(back) == h.state


def test_commands_round_trip_and_unknown_tags_fail() -> None:
    for cmd in (Bet(1, 40), RaiseTo(0, 100), Show(2, (12, 51)), Show(1), Muck(0)):
        tag, text = CODEC.encode(cmd)
        assert tag == f"command.{type(cmd).__name__}" and CODEC.decode(text) == cmd
    with pytest.raises(CodecError, match="unknown domain type tag"):
        CODEC.decode('{"$t":"holdem.Nope"}')
    with pytest.raises(CodecError, match="untagged"):
        CODEC.decode('{"a":1}')
    with pytest.raises(CodecError, match="cannot encode"):
        CODEC.to_plain(1.5)
    with pytest.raises(CodecError, match="unregistered"):
        CODEC.type_tag(object())
