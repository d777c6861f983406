"""Event/command dict codec round trips (JSON) over random hands."""

from __future__ import annotations

import json
import random

import pytest
from electric_domain.holdem import Bet, HoldemHand, Muck, RaiseTo, Show, replay
from electric_domain.holdem.codec import (
    command_from_dict,
    command_to_dict,
    event_from_dict,
    event_to_dict,
)


def test_events_round_trip_through_json() -> None:
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
        wire = json.dumps([event_to_dict(e) for e in h.events])
        back = [event_from_dict(d) for d in json.loads(wire)]
        assert back == h.events
        assert replay(back) == h.state


def test_commands_round_trip_and_unknown_type() -> None:
    for cmd in (Bet(1, 40), RaiseTo(0, 100), Show(2, (12, 51)), Show(1), Muck(0)):
        assert command_from_dict(json.loads(json.dumps(command_to_dict(cmd)))) == cmd
    with pytest.raises(ValueError, match="unknown event type"):
        event_from_dict({"type": "Nope"})
