"""The text client's renderers, fed by hand-made stream messages (no server)."""

from __future__ import annotations

import hashlib

from electric.common.v1 import cards_pb2, money_pb2
from electric.registration.v1 import registration_pb2
from electric.table.v1 import table_pb2
from electric_bots.tui import (
    DrawnAction,
    DrawnAward,
    DrawnPlace,
    MyTablesRenderer,
    TableRenderer,
)

SEED = bytes(range(32))


def msg(sequence: int, **event: object) -> table_pb2.WatchTableResponse:
    return table_pb2.WatchTableResponse(sequence=sequence, event=table_pb2.TableEvent(**event))  # type: ignore[arg-type]


def card(text: str) -> cards_pb2.Card:
    return cards_pb2.Card(text=text)


def view() -> table_pb2.TableView:
    return table_pb2.TableView(
        table_id="t1",
        table_name="Table One",
        your_seat=2,
        multiplier=3,
        buy_in=money_pb2.Money(cents=500),
        prize_pool=money_pb2.Money(cents=1500),
        seats=[
            table_pb2.SeatView(seat=s, player_id=f"p{s}", display_name=f"Player {s}", stack=500)
            for s in (1, 2, 3)
        ],
    )


def story() -> list[table_pb2.WatchTableResponse]:
    commitment = hashlib.sha256(SEED).hexdigest()
    return [
        table_pb2.WatchTableResponse(sequence=1, table=view()),
        msg(
            2,
            hand_started=table_pb2.HandStartEvent(
                hand_number=1,
                button_seat=1,
                small_blind_seat=2,
                big_blind_seat=3,
                deck_commitment=commitment,
            ),
        ),
        msg(
            3,
            forced_bet=table_pb2.ForcedBetEvent(
                hand_number=1, seat=2, type=table_pb2.FORCED_BET_TYPE_SMALL_BLIND, amount=10
            ),
        ),
        msg(
            4,
            hole_cards_dealt=table_pb2.HoleCardsEvent(
                hand_number=1, seat=2, cards=[card("As"), card("Ah")]
            ),
        ),
        msg(5, hole_cards_dealt=table_pb2.HoleCardsEvent(hand_number=1, seat=3, card_count=2)),
        msg(
            6,
            action=table_pb2.ActionEvent(
                hand_number=1,
                action_seq=1,
                seat=1,
                action=table_pb2.ACTION_TYPE_RAISE,
                amount_added=60,
                street_bet=60,
            ),
        ),
        msg(
            7,
            action=table_pb2.ActionEvent(
                hand_number=1,
                action_seq=2,
                seat=2,
                action=table_pb2.ACTION_TYPE_CALL,
                amount_added=50,
                street_bet=60,
                origin=table_pb2.ACTION_ORIGIN_PRE_ACTION,
            ),
        ),
        msg(
            8,
            street_dealt=table_pb2.StreetEvent(
                hand_number=1,
                street=table_pb2.STREET_FLOP,
                board=[card("2c"), card("7d"), card("Kh")],
            ),
        ),
        msg(
            9,
            showdown=table_pb2.ShowdownEvent(
                hand_number=1, seat=1, decision=table_pb2.SHOWDOWN_DECISION_MUCK
            ),
        ),
        msg(
            10,
            pot_awarded=table_pb2.PotAwardEvent(
                hand_number=1,
                pot_index=1,
                amount=120,
                winners=[table_pb2.PotShare(seat=2, amount=120, hand_description="Pair of Aces")],
            ),
        ),
        msg(
            11,
            hand_ended=table_pb2.HandEndEvent(
                hand_number=1, deck_commitment=commitment, deck_seed=SEED.hex()
            ),
        ),
        msg(
            12,
            tournament_finished=table_pb2.TournamentEndEvent(
                hands_played=1,
                places=[
                    table_pb2.PlaceResult(
                        place=1,
                        seat=2,
                        player_id="p2",
                        prize=money_pb2.Money(cents=1500),
                        tied_count=1,
                    )
                ],
            ),
        ),
    ]


def test_the_story_is_drawn_and_recorded() -> None:
    r = TableRenderer()
    lines = [line for m in story() for line in r.feed(m)]
    text = "\n".join(lines)
    assert "=== Table One · buy-in $5.00 · x3 · prize pool $15.00 ===" in text
    assert "Seat 2: Player 2 (you) — 500 chips" in text
    assert "Player 2 posts small blind 10" in text
    assert "Dealt to Player 2: [As Ah]" in text and "Dealt to Player 3" not in text
    assert "Player 1 raises to 60" in text
    assert "Player 2 calls 50 [pre-action]" in text
    assert "*** FLOP *** [2c 7d Kh]" in text
    assert "Player 1 mucks" in text
    assert "Player 2 wins 120 from side pot 1 (120) with Pair of Aces" in text
    assert "matches the commitment" in text
    assert "1. Player 2 — $15.00" in text
    assert r.drawn.actions == [
        DrawnAction(1, 1, 1, "RAISE", 60, 60),
        DrawnAction(1, 2, 2, "CALL", 50, 60),
    ]
    assert r.drawn.awards == [DrawnAward(1, 1, 2, 120)]
    assert r.drawn.places == [DrawnPlace(1, 2, "p2", 1500)]
    assert r.drawn.seeds_verified == [1]
    assert r.finished and r.sequence == 12


def test_a_resumed_stream_draws_nothing_twice_and_a_bad_seed_is_flagged() -> None:
    r = TableRenderer()
    messages = story()
    for m in messages[:7]:
        r.feed(m)
    again = [line for m in messages[4:] for line in r.feed(m)]  # a resume re-sends 5..12
    assert not any("raises to 60" in line for line in again)
    assert len(r.drawn.actions) == 2
    bad = TableRenderer()
    ended = messages[10]
    ended.event.hand_ended.deck_seed = bytes(32).hex()
    assert "DOES NOT MATCH" in "\n".join(bad.feed(ended))
    assert bad.drawn.seeds_verified == []


def test_the_multi_table_bar_draws_changes_only() -> None:
    bar = MyTablesRenderer()
    table = registration_pb2.MyTable(
        table_id="t1", table_name="Table One", status=registration_pb2.TABLE_STATUS_RUNNING,
        my_seat=2, my_stack=480, my_turn=True,
    )  # fmt: skip
    first = bar.feed(registration_pb2.WatchMyTablesResponse(tables=[table]))
    assert first == ["[Table One] running · seat 2 · stack 480 · YOUR TURN"]
    assert bar.feed(registration_pb2.WatchMyTablesResponse(tables=[table])) == []
    table.status = registration_pb2.TABLE_STATUS_FINISHED
    table.finishing_place = 1
    table.prize.cents = 1500
    (line,) = bar.feed(registration_pb2.WatchMyTablesResponse(tables=[table]))
    assert "finished 1, prize $15.00" in line and bar.status["t1"] == "finished"
