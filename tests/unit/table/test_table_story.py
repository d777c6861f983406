"""WatchTable's story (`electric_table.tournament.story`) over whole simulated tournaments:
every stored event becomes the client event a table animates, and the story alone is enough
to redraw every hand — stacks rebuilt from deals, blinds, actions, returned bets and awards
equal the stacks the hand ended with; pots after every round equal the chips collected;
the showdown follows seed rule 10's order; privacy per caller."""

from __future__ import annotations

import pytest
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_domain.tournament import Tournament, default_config
from electric_math import simulate as sim
from electric_table.tournament import mapping
from electric_table.tournament.story import Story, for_viewer, layered_pots

from tests.support.table_kit import table_info

LINEUPS = [
    ("random", "tag", "timeout"),
    ("sitout", "random", "random"),
    ("tag", "tag", "random"),
    ("random", "random", "random"),
]


def _story(index: int) -> tuple[Tournament, list[mapping.Mapped], Story]:
    cfg = default_config()
    mapped: list[mapping.Mapped] = []
    done = 0

    def observe(t: Tournament) -> None:
        nonlocal done
        batch = t.history[done:]
        done = len(t.history)
        mapped.extend(
            mapping.to_protos(
                batch,
                table_info(t),
                t.hand_facts(batch),
                level_ms=t.config.level_duration_ms,
                multiplier=t.state.multiplier,
                prize_pool_cents=t.state.prize_pool_cents,
                buy_in_cents=t.state.buy_in_cents,
            )
        )

    played = sim.play(
        cfg, sim.tournament_seed(7, index), sim.make_bots(LINEUPS[index % 4]), observe=observe
    )
    story = Story()
    for k, m in enumerate(mapped, start=1):
        story.feed(k, m.message)
    return played.tournament, mapped, story


def _redraw(events: list[table_pb2.TableEvent]) -> dict[int, dict[int, int]]:
    """Replays the story like a text client: chips per seat, checked at every hand end."""
    stacks: dict[int, int] = {}
    committed: dict[int, int] = {}
    awarded: dict[int, int] = {}
    ended: dict[int, dict[int, int]] = {}
    hand = 0
    for ev in events:
        kind = ev.WhichOneof("kind")
        if kind == "hand_started":
            hand = ev.hand_started.hand_number
            stacks = {s.seat: s.stack for s in ev.hand_started.stacks}
            committed = dict.fromkeys(stacks, 0)
            awarded = {}
        elif kind == "forced_bet":
            stacks[ev.forced_bet.seat] -= ev.forced_bet.amount
            committed[ev.forced_bet.seat] += ev.forced_bet.amount
        elif kind == "action":
            stacks[ev.action.seat] -= ev.action.amount_added
            committed[ev.action.seat] += ev.action.amount_added
            assert stacks[ev.action.seat] >= 0
        elif kind == "uncalled_bet_returned":
            stacks[ev.uncalled_bet_returned.seat] += ev.uncalled_bet_returned.amount
            committed[ev.uncalled_bet_returned.seat] -= ev.uncalled_bet_returned.amount
        elif kind == "pots":
            # After every closed round the pots hold exactly the chips put in so far.
            assert ev.pots.total == sum(committed.values())
            assert sum(p.amount for p in ev.pots.pots) == ev.pots.total
        elif kind == "pot_awarded":
            assert sum(w.amount for w in ev.pot_awarded.winners) == ev.pot_awarded.amount
            for w in ev.pot_awarded.winners:
                stacks[w.seat] += w.amount
                awarded[w.seat] = awarded.get(w.seat, 0) + w.amount
        elif kind == "hand_ended":
            assert ev.hand_ended.hand_number == hand
            assert sum(awarded.values()) == sum(committed.values())
            final = {s.seat: s.stack for s in ev.hand_ended.stacks}
            assert {s: final[s] for s in stacks} == stacks, f"hand {hand}"
            ended[hand] = dict(stacks)
    return ended


@pytest.mark.parametrize("index", range(8))
def test_the_story_redraws_every_hand(index: int) -> None:
    t, mapped, story = _story(index)
    # One item per stored event, sequences contiguous; the events in stream order.
    assert [i.sequence for i in story.items] == list(range(1, len(mapped) + 1))
    events = [i.event for i in story.items if i.event is not None]
    assert [e.sequence for e in events] == sorted(e.sequence for e in events)
    ended = _redraw(events)
    assert len(ended) == t.state.hand_no  # every hand ended, none skipped
    # Every decision is told, with its amount, exactly once.
    actions = [m.message for m in mapped if isinstance(m.message, tev.ActionTaken)]
    told = [e.action for e in events if e.WhichOneof("kind") == "action"]
    assert [(a.hand_number, a.action_seq, a.seat, a.amount_added) for a in actions] == [
        (a.hand_number, a.action_seq, a.seat, a.amount_added) for a in told
    ]
    # Eliminations and the finish are told; the last event is the finish.
    assert events[-1].WhichOneof("kind") == "tournament_finished"
    out = [e for e in events if e.WhichOneof("kind") == "eliminated"]
    assert len(out) == len(t.state.seats) - 1
    # Hole cards: two per dealt seat; a seat sees its own, nobody else's.
    for e in events:
        if e.WhichOneof("kind") == "hole_cards_dealt":
            seat = e.hole_cards_dealt.seat
            assert len(e.hole_cards_dealt.cards) == 2
            assert len(for_viewer(e, seat).hole_cards_dealt.cards) == 2  # type: ignore[union-attr]
            other = seat % 3 + 1
            seen = for_viewer(e, other)
            assert seen is not None and not seen.hole_cards_dealt.cards
            assert seen.hole_cards_dealt.card_count == 2
            observer = for_viewer(e, 0)
            assert observer is not None and not observer.hole_cards_dealt.cards
        if e.WhichOneof("kind") == "hand_ended":
            assert e.hand_ended.deck_seed  # seated players get the seed
            observer = for_viewer(e, 0)
            assert observer is not None and not observer.hand_ended.deck_seed
        if e.WhichOneof("kind") == "pre_action":
            assert for_viewer(e, e.pre_action.seat) is e
            assert for_viewer(e, e.pre_action.seat % 3 + 1) is None


def test_showdowns_follow_seed_rule_10_and_awards_name_the_hands() -> None:
    """Seed 000 rule 10: the last river bettor/raiser shows first, else the first live seat
    left of the button; then clockwise. Awards at showdown carry best five and rank."""
    checked = 0
    for index in range(8):
        _, _, story = _story(index)
        hand_events: list[table_pb2.TableEvent] = []
        button = 0
        for item in story.items:
            e = item.event
            if e is None:
                continue
            kind = e.WhichOneof("kind")
            if kind == "hand_started":
                hand_events = []
                button = e.hand_started.button_seat
            hand_events.append(e)
            if kind != "hand_ended":
                continue
            shows = [x.showdown for x in hand_events if x.WhichOneof("kind") == "showdown"]
            if not shows or any(s.reason == table_pb2.SHOWDOWN_REASON_ALL_IN for s in shows):
                continue
            river = [
                x.action
                for x in hand_events
                if x.WhichOneof("kind") == "action"
                and x.action.street == table_pb2.STREET_RIVER
                and x.action.action
                in (
                    table_pb2.ACTION_TYPE_BET,
                    table_pb2.ACTION_TYPE_RAISE,
                    table_pb2.ACTION_TYPE_ALL_IN,
                )
            ]
            folded = {
                x.action.seat
                for x in hand_events
                if x.WhichOneof("kind") == "action"
                and x.action.action == table_pb2.ACTION_TYPE_FOLD
            }
            if river:
                first = river[-1].seat
            else:
                first = next(
                    s for s in ((button + k - 1) % 3 + 1 for k in range(1, 4)) if s not in folded
                )
            assert shows[0].seat == first
            assert shows[0].decision == table_pb2.SHOWDOWN_DECISION_SHOW
            for x in hand_events:
                if x.WhichOneof("kind") == "pot_awarded":
                    for w in x.pot_awarded.winners:
                        assert len(w.best_five) == 5 and w.hand_description
                        assert w.category != table_pb2.HAND_CATEGORY_UNSPECIFIED
            checked += 1
    assert checked > 0


def test_layered_pots_split_side_pots_by_contribution() -> None:
    # Seat 1 all-in for 100, seats 2 and 3 put in 300 each; seat 3 folded later? no: seat 4
    # folded after putting in 50 (dead money in the main pot).
    pots = layered_pots({1: 100, 2: 300, 3: 300, 4: 50}, live={1, 2, 3})
    assert pots == [(350, (1, 2, 3)), (400, (2, 3))]
    assert layered_pots({1: 40, 2: 40}, live={1, 2}) == [(80, (1, 2))]


def test_views_keep_the_hand_end_and_render_pots_timer_and_last_actions() -> None:
    """Issue 11 gaps 1, 2, 5 on the snapshot: between hands the view keeps who folded and
    who held cards, the last hand's awards and (seated players only) its deck seed; during a
    hand the pots split into main and side pots equal to the chips collected, the timer
    ring is complete, every seat that acted shows its last action; a finished table's
    clocks stop."""
    from electric_table.tournament.runtime import TableRuntime
    from electric_table.tournament.views import build_view

    cfg = default_config()
    seen = {"between": 0, "side_pots": 0, "ring": 0}
    for index in range(6):
        holder: dict[str, TableRuntime] = {}

        def observe(t: Tournament, holder: dict[str, TableRuntime] = holder) -> None:
            rt = holder.get("rt")
            batch = t.history[rt.version if rt is not None and rt.tournament is t else 0 :]
            info = table_info(t)
            new = mapping.to_protos(
                batch,
                info,
                t.hand_facts(batch),
                level_ms=t.config.level_duration_ms,
                multiplier=t.state.multiplier,
                prize_pool_cents=t.state.prize_pool_cents,
                buy_in_cents=t.state.buy_in_cents,
            )
            if rt is None or rt.tournament is not t:
                rt = TableRuntime("t-1", info, t.config, t, 0)
                holder["rt"] = rt
            for m in new:
                rt.version += 1
                rt.story.feed(rt.version, m.message)
            st = t.state
            player = st.seats[0].player_id
            v = build_view(rt, player, st.now)
            if st.finished:
                later = build_view(rt, player, st.now + 60_000)
                assert later.clock_remaining == v.clock_remaining  # clocks stopped
                assert not later.HasField("level_ends_at")
                return
            if st.hand_no and not t.hand_live():
                seen["between"] += 1
                assert not v.hand.in_progress and v.hand.awards
                ended = [m.message for m in new if isinstance(m.message, tev.HandEnded)]
                if ended:
                    assert v.hand.deck_seed == ended[-1].deck_seed
                obs = build_view(rt, "nobody", st.now)
                assert not obs.hand.deck_seed and obs.hand.awards
                folded = {s for s, a in rt.story.last_action.items() if a.action == 1}
                assert {s.seat for s in v.seats if s.folded} == folded
                assert any(s.has_cards for s in v.seats)  # the winner's hand, at least
            elif t.hand_live() and v.hand.in_progress:
                snap = t.port.snapshot(st.hand)
                collected = snap.pot_total - sum(h.street_bet for h in snap.seats.values())
                assert sum(p.amount for p in v.hand.pots) == collected
                if len(v.hand.pots) > 1:
                    seen["side_pots"] += 1
                for s in v.seats:
                    last = rt.story.last_action.get(s.seat)
                    assert s.last_action == (last.action if last else 0)
                if st.turn is not None:
                    seen["ring"] += 1
                    ring = v.hand.turn_timer
                    assert ring.seat == st.turn.seat + 1
                    assert ring.deadline.ToMilliseconds() == st.turn.deadline
                    assert ring.turn_started_at.ToMilliseconds() == st.turn.started_at
                    assert ring.action_timer.ToMilliseconds() == cfg.action_timer_ms
                    bank = st.seats[st.turn.seat].bank_ms
                    assert ring.time_bank_remaining.ToMilliseconds() == bank
                    assert ring.time_bank_in_use == (st.turn.phase.value == "bank")

        sim.play(
            cfg, sim.tournament_seed(12, index), sim.make_bots(LINEUPS[index % 4]), observe=observe
        )
    assert seen["between"] > 10 and seen["ring"] > 10


def test_side_pots_in_the_view_and_the_pots_event() -> None:
    """Seed 6.a.i: a short all-in makes a main pot it can win and a side pot of the rest;
    the view's pots and the story's pots event show both with their eligible seats."""
    from electric_table.tournament.runtime import TableRuntime
    from electric_table.tournament.views import build_view

    from tests.support.tournament_table import Table

    tb = Table()
    t = tb.t
    rt = TableRuntime("t-1", table_info(t), t.config, t, 0)

    def sync() -> None:
        batch = t.history[rt.version :]
        for m in mapping.to_protos(
            batch,
            rt.info,
            t.hand_facts(batch),
            level_ms=t.config.level_duration_ms,
            multiplier=t.state.multiplier,
            prize_pool_cents=t.state.prize_pool_cents,
            buy_in_cents=t.state.buy_in_cents,
        ):
            rt.version += 1
            rt.story.feed(rt.version, m.message)

    # Hand 1 (button 2, SB 0, BB 1): seat 0 loses 300 → stacks 200 / 480 / 820.
    tb.deal(1_000)
    tb.act(2, "raise_to", 2_000, 300)
    tb.act(0, "call", 3_000)
    tb.act(1, "fold", 4_000)
    tb.act(0, "check", 5_000)
    tb.act(2, "bet", 6_000, 100)
    tb.act(0, "fold", 7_000)
    assert [s.stack for s in t.state.seats] == [200, 480, 820]
    # Hand 2 (button 0, SB 1, BB 2): seat 0 all-in 200, both call; seat 1 bets 100 on the
    # flop, seat 2 calls: main pot 600 (all three), side pot 200 (seats 2 and 3 in API terms).
    tb.deal(10_000)
    tb.act(0, "all_in", 11_000)
    tb.act(1, "call", 12_000)
    tb.act(2, "call", 13_000)
    tb.act(1, "bet", 14_000, 100)
    tb.act(2, "call", 15_000)
    sync()
    v = build_view(rt, "p1", t.state.now)
    assert v.hand.in_progress
    assert [(p.index, p.amount, list(p.eligible_seats)) for p in v.hand.pots] == [
        (0, 600, [1, 2, 3]),
        (1, 200, [2, 3]),
    ]
    pots = [
        i.event.pots
        for i in rt.story.items
        if i.event is not None and i.event.WhichOneof("kind") == "pots"
    ]
    assert [(p.amount, list(p.eligible_seats)) for p in pots[-1].pots] == [
        (600, [1, 2, 3]),
        (200, [2, 3]),
    ]
