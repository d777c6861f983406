"""``electric-audit verify``'s ``progress`` check: every table summary agrees with the facts.

A tournament table ends each append that changed what My Tables shows with a
``TableProgress`` (docs/table-service.md, "The appends' summaries"): the hand number, every
seat's stack, the seat to act and its deadline. Registration shows players only these
summaries (it decodes no per-action event), so a summary that disagrees with the table's own
events would show a player a wrong stack or turn with nothing else to catch it. This check
folds each table stream's typed events as a reader of the facts would and compares every
summary with the fold at its place:

- TableStarted: every seat at the starting stack;
- HandStarted / HandEnded: the stacks they carry; nobody's turn;
- BlindPosted (antes and blinds) and ActionTaken: the seat's stack down by the chips put in;
  an action ends the turn;
- HandEngineEvent ``UncalledBetReturned`` and PotAwarded: stacks up;
- TurnStarted: the seat to act and its deadline; TimeoutApplied with a deadline (the time
  bank started): the later deadline;
- PlayerEliminated: the seat at 0.

Each stream is read in version order, once per event id (a topic is at least once).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from electric.table.v1 import events_pb2 as tev
from google.protobuf.message import Message

from electric_audit.checks import CheckResult
from electric_audit.sources import Located, Source

#: The table stream prefix (``electric_table.journal.table_stream``).
TABLE_PREFIX = "table-"
UNCALLED_BET_RETURNED = "UncalledBetReturned"


@dataclass
class _Fold:
    """What the facts say a My Tables row shows, as the stream is read."""

    hand: int = 0
    stacks: dict[int, int] = field(default_factory=dict)
    turn: tuple[int, int] = (0, 0)  # seat (0: nobody), deadline in ms (0: none)

    def summary(self, m: tev.TableProgress) -> tuple[object, ...]:
        deadline = m.turn_deadline.ToMilliseconds() if m.HasField("turn_deadline") else 0
        stacks = {s.seat: s.stack for s in m.stacks}
        return (m.hand_number, stacks, (m.turn_seat, deadline))

    def expected(self) -> tuple[object, ...]:
        return (self.hand, dict(self.stacks), self.turn)


def _started(f: _Fold, m: tev.TableStarted) -> None:
    f.stacks = {s.seat: m.starting_stack for s in m.seats}


def _hand_bounds(f: _Fold, m: tev.HandStarted | tev.HandEnded) -> None:
    f.hand = max(f.hand, m.hand_number)
    f.stacks.update({s.seat: s.stack for s in m.stacks})
    f.turn = (0, 0)


def _blind(f: _Fold, m: tev.BlindPosted) -> None:
    f.stacks[m.seat] = f.stacks.get(m.seat, 0) - m.amount


def _action(f: _Fold, m: tev.ActionTaken) -> None:
    f.stacks[m.seat] = f.stacks.get(m.seat, 0) - m.amount_added
    f.turn = (0, 0)


def _engine(f: _Fold, m: tev.HandEngineEvent) -> None:
    if m.kind == UNCALLED_BET_RETURNED and m.seat:
        f.stacks[m.seat] = f.stacks.get(m.seat, 0) + m.amount


def _pot(f: _Fold, m: tev.PotAwarded) -> None:
    for w in m.winners:
        f.stacks[w.seat] = f.stacks.get(w.seat, 0) + w.amount


def _turn(f: _Fold, m: tev.TurnStarted) -> None:
    f.turn = (m.seat, m.deadline.ToMilliseconds() if m.HasField("deadline") else 0)


def _timeout(f: _Fold, m: tev.TimeoutApplied) -> None:
    if m.HasField("deadline"):
        f.turn = (m.seat, m.deadline.ToMilliseconds())


def _eliminated(f: _Fold, m: tev.PlayerEliminated) -> None:
    f.stacks[m.seat] = 0


_FOLDS: dict[str, tuple[type[Message], Callable[[_Fold, object], None]]] = {
    cls.DESCRIPTOR.full_name: (cls, fold)  # type: ignore[misc]
    for cls, fold in (
        (tev.TableStarted, _started),
        (tev.HandStarted, _hand_bounds),
        (tev.HandEnded, _hand_bounds),
        (tev.BlindPosted, _blind),
        (tev.ActionTaken, _action),
        (tev.HandEngineEvent, _engine),
        (tev.PotAwarded, _pot),
        (tev.TurnStarted, _turn),
        (tev.TimeoutApplied, _timeout),
        (tev.PlayerEliminated, _eliminated),
    )
}
_SUMMARY = tev.TableProgress.DESCRIPTOR.full_name


def _table_streams(source: Source) -> dict[str, list[Located]]:
    streams: dict[str, list[Located]] = defaultdict(list)
    seen: set[str] = set()
    for located in source.events:
        e = located.envelope
        if not e.stream_id.startswith(TABLE_PREFIX) or e.event_id in seen:
            continue
        if e.event_type != _SUMMARY and e.event_type not in _FOLDS:
            continue
        seen.add(e.event_id)
        streams[e.stream_id].append(located)
    return streams


def check_progress(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("progress")
    for source in sources:
        for events in _table_streams(source).values():
            fold = _Fold()
            for located in sorted(events, key=lambda x: x.envelope.stream_version):
                e = located.envelope
                if e.event_type == _SUMMARY:
                    summary = tev.TableProgress.FromString(e.payload.value)
                    result.checked += 1
                    got, want = fold.summary(summary), fold.expected()
                    if got != want:
                        result.fail(located.location(), f"summary {got} != the facts' {want}")
                    continue
                cls, apply = _FOLDS[e.event_type]
                apply(fold, cls.FromString(e.payload.value))
    return result
