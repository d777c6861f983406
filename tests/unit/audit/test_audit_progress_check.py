"""The ``progress`` check (``electric_audit.checks_progress``): a table's summaries
(``TableProgress``) must agree with a fold of its own facts; one that does not is reported
at its place. Real played streams pass it (tests/component/audit/test_audit_platform.py)."""

from __future__ import annotations

from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as tev
from electric_audit.checks_progress import check_progress
from electric_audit.sources import Located, Source
from google.protobuf.message import Message

TABLE = "t1"


def _stream(*messages: Message, copies: int = 1) -> Source:
    events = []
    for version, m in enumerate(messages, start=1):
        envelope = Envelope(
            event_id=f"e{version}",
            stream_id=f"table-{TABLE}",
            stream_version=version,
            event_type=m.DESCRIPTOR.full_name,
        )
        envelope.payload.Pack(m)
        for _ in range(copies):  # a topic redelivers
            events.append(Located(envelope, "topic:table", f"offset {len(events)}", len(events)))
    return Source("table", "topic", events)


def _summary(hand: int, stacks: dict[int, int], turn: int = 0, deadline_ms: int = 0) -> Message:
    m = tev.TableProgress(
        table_id=TABLE,
        hand_number=hand,
        stacks=[tev.SeatStack(seat=s, stack=x) for s, x in stacks.items()],
        turn_seat=turn,
    )
    if deadline_ms:
        m.turn_deadline.FromMilliseconds(deadline_ms)
    return m


def _hand(summary_after_call: Message) -> list[Message]:
    seats = [tournament_pb2.SeatAssignment(seat=s, player_id=f"p{s}") for s in (1, 2, 3)]
    turn = tev.TurnStarted(table_id=TABLE, hand_number=1, seat=3)
    turn.deadline.FromMilliseconds(10_000)
    return [
        tev.TableStarted(table_id=TABLE, starting_stack=500, seats=seats),
        tev.HandStarted(
            table_id=TABLE,
            hand_number=1,
            stacks=[tev.SeatStack(seat=s, stack=500) for s in (1, 2, 3)],
        ),
        tev.BlindPosted(table_id=TABLE, hand_number=1, seat=1, amount=10),
        tev.BlindPosted(table_id=TABLE, hand_number=1, seat=2, amount=20),
        turn,
        _summary(1, {1: 490, 2: 480, 3: 500}, 3, 10_000),
        tev.ActionTaken(table_id=TABLE, hand_number=1, seat=3, amount_added=20),
        summary_after_call,
    ]


def test_summaries_that_agree_with_the_facts_pass_once_each_despite_redelivery() -> None:
    source = _stream(*_hand(_summary(1, {1: 490, 2: 480, 3: 480})), copies=2)
    result = check_progress([source])
    assert (result.checked, result.failed) == (2, 0), result


def test_a_summary_showing_a_wrong_stack_or_turn_fails_at_its_place() -> None:
    wrong_stack = check_progress([_stream(*_hand(_summary(1, {1: 490, 2: 480, 3: 500})))])
    assert (wrong_stack.checked, wrong_stack.failed) == (2, 1)
    assert "stream table-t1 version 8" in str(wrong_stack.first_failure)
    still_turn = check_progress([_stream(*_hand(_summary(1, {1: 490, 2: 480, 3: 480}, 3)))])
    assert still_turn.failed == 1, still_turn
