"""electric-audit events / verify over real SQLite stores (built with the EventStore): a clean
store passes; one changed payload byte, a deleted event and two swapped events are each
reported at their exact location; usage and connection errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from electric.common.v1.cards_pb2 import Card
from electric.table.v1 import events_pb2 as tev
from electric_audit.cli import main
from electric_audit.sources import store_name
from electric_domain.cards import card_str
from electric_domain.deck import commitment, derive_deck
from electric_eventlog import ANY, EventStore, create_engine, migrate, schema
from google.protobuf.message import Message
from sqlalchemy import delete, select, update

from tests.support.backends import Backend

SEED = bytes(range(32))


def _card(text: str) -> Card:
    return Card(text=text)


def hand_events(table: str, number: int, seed: bytes, players: list[str]) -> list[Message]:
    deck = [card_str(c) for c in derive_deck(seed)]
    n = len(players)
    events: list[Message] = [
        tev.HandStarted(table_id=table, hand_number=number, deck_commitment=commitment(seed))
    ]
    for k, player in enumerate(players):
        cards = [_card(deck[k]), _card(deck[n + k])]
        events.append(
            tev.CardsDealt(
                table_id=table, hand_number=number, seat=k + 1, player_id=player, cards=cards
            )
        )
    for board in (
        deck[2 * n + 1 : 2 * n + 4],
        deck[2 * n + 5 : 2 * n + 6],
        deck[2 * n + 7 : 2 * n + 8],
    ):
        events.append(
            tev.StreetDealt(table_id=table, hand_number=number, cards=[_card(c) for c in board])
        )
    events.append(
        tev.HandEnded(
            table_id=table,
            hand_number=number,
            deck_seed=seed.hex(),
            deck_commitment=commitment(seed),
        )
    )
    return events


@pytest.fixture
def table_db(backend: Backend) -> str:
    """A table-like store on each backend (SQLite file; fresh PostgreSQL database)."""
    url = backend.url
    engine = create_engine(url)
    migrate(engine)
    store = EventStore(engine, producer="table")
    for number in (1, 2):
        for table in ("t1", "t2"):
            seed = bytes([number, *SEED[1:]]) if table == "t1" else bytes([9 + number, *SEED[1:]])
            store.append_in_new_tx(
                f"table-{table}", ANY, hand_events(table, number, seed, ["p1", "p2", "p3"])
            )
    engine.dispose()
    return url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def checks(out: str) -> dict[str, dict[str, object]]:
    return {r["check"]: r for r in map(json.loads, out.splitlines())}


def test_clean_store_passes_every_check(table_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "verify", "--store", table_db, "--json")
    assert code == 0, out
    result = checks(out)
    assert result["chains"]["checked"] == 2 * 2 * 8 and result["chains"]["failed"] == 0
    assert result["decks"]["checked"] == 4 and result["decks"]["failed"] == 0
    code, text = run(capsys, "verify", "--store", table_db)
    assert code == 0 and "all checks pass" in text and "decks" in text


def _rows(url: str) -> list[dict[str, object]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [
            dict(r)
            for r in conn.execute(
                select(schema.events).order_by(schema.events.c.global_position)
            ).mappings()
        ]
    engine.dispose()
    return rows


def _write(url: str, *statements: object) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[call-overload]
    engine.dispose()


def test_one_changed_byte_is_located(table_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = _rows(table_db)[10]  # table-t2 (second append), version 3
    payload = bytearray(bytes(target["payload"]))  # type: ignore[call-overload]
    payload[-1] ^= 0x01
    events = schema.events
    _write(
        table_db,
        update(events).where(events.c.global_position == 11).values(payload=bytes(payload)),
    )
    code, out = run(capsys, "verify", "--store", table_db, "--json")
    assert code == 1
    chains = checks(out)["chains"]
    assert chains["failed"] == 1
    stream, version = target["stream_id"], target["stream_version"]
    where = f"store:{store_name(table_db)} stream {stream} version {version} position 11"
    assert str(chains["first_failure"]).startswith(where)
    assert "hash mismatch" in str(chains["first_failure"])


def test_deleted_event_is_located(table_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    events = schema.events
    outbox = schema.outbox
    _write(
        table_db,
        delete(outbox).where(outbox.c.global_position == 3),
        delete(events).where(events.c.global_position == 3),
    )
    code, out = run(capsys, "verify", "--store", table_db, "--json")
    assert code == 1
    result = checks(out)
    assert str(result["chains"]["first_failure"]).startswith(
        f"store:{store_name(table_db)} stream table-t1 version 4 position 4: version 4 follows 2"
    )
    assert str(result["positions"]["first_failure"]).startswith(
        f"store:{store_name(table_db)} stream table-t1 version 4 position 4: "
        "global position 4 follows 2"
    )


def test_two_swapped_events_are_located(table_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(table_db)
    a, b = rows[1], rows[2]  # table-t1 versions 2 and 3: swap their contents
    events = schema.events
    fields = ("event_id", "event_type", "payload_type_url", "payload")
    _write(table_db, update(events).where(events.c.global_position == 2).values(event_id="tmp"))
    _write(
        table_db,
        update(events).where(events.c.global_position == 3).values({f: a[f] for f in fields}),
    )
    _write(
        table_db,
        update(events).where(events.c.global_position == 2).values({f: b[f] for f in fields}),
    )
    code, out = run(capsys, "verify", "--store", table_db, "--json")
    assert code == 1
    chains = checks(out)["chains"]
    assert str(chains["first_failure"]).startswith(
        f"store:{store_name(table_db)} stream table-t1 version 2 position 2: hash mismatch"
    )


def test_a_wrong_deck_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'bad.db'}"
    engine = create_engine(url)
    migrate(engine)
    events = hand_events("t9", 1, SEED, ["a", "b"])
    events[1] = tev.CardsDealt(
        table_id="t9", hand_number=1, seat=1, player_id="a", cards=[_card("As"), _card("Ad")]
    )
    EventStore(engine, producer="table").append_in_new_tx("table-t9", ANY, events)
    engine.dispose()
    code, out = run(capsys, "verify", "--store", url, "--json")
    deck_cards = [card_str(c) for c in derive_deck(SEED)][:4]
    assert "As" not in deck_cards[:1] or "Ad" not in deck_cards  # the forged pair is not dealt
    assert code == 1
    assert str(checks(out)["decks"]["first_failure"]).startswith(
        "store:bad.db" + " stream table-t9 version 2 position 2: hole cards"
    )


def test_events_are_decoded_filtered_and_read_only(
    table_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = Path(table_db.removeprefix("sqlite:///"))
    before = file.read_bytes() if table_db.startswith("sqlite") else b""
    code, out = run(
        capsys,
        "events",
        "--store",
        table_db,
        "--json",
        "--table",
        "t2",
        "--type",
        "CardsDealt",
        "--player",
        "p2",
    )
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["payload"]["hand_number"] for r in records] == ["1", "2"]
    assert all(r["payload"]["player_id"] == "p2" and r["stream_id"] == "table-t2" for r in records)
    assert records[0]["payload"]["cards"][0]["text"]
    code, text = run(capsys, "events", "--store", table_db, "--stream", "table-t1")
    assert code == 0 and len(text.splitlines()) == 16 and "HandStarted" in text.splitlines()[0]
    if before:  # opened with mode=ro: not one byte of the file changed
        assert file.read_bytes() == before


def test_usage_and_connection_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify"]) == 2
    assert main(["verify", "--store", f"sqlite:///{tmp_path / 'missing.db'}"]) == 2
    assert main(["events", "--store", "sqlite://"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["events", "--since", "yesterday", "--store", "sqlite:///x"])
    assert exc.value.code == 2
    capsys.readouterr()
