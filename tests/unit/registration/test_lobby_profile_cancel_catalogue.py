"""Pure lobby rules of issue 11: player settings, table cancellation, the lobby's pay table."""

from __future__ import annotations

import pytest
from electric_domain import lobby
from electric_domain.lobby.settlement import Account
from electric_domain.tournament import default_config

# ------------------------------------------------------------------------- player settings


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("Alice", True),
        ("a", True),
        ("Mr. Big_Stack-99", True),
        ("x" * 24, True),
        ("x" * 25, False),
        ("", False),
        (" Alice", False),
        ("Alice ", False),
        ("Al  ice", False),
        ("Alïce", False),  # ASCII only: no look-alike letters
        ("al@ce", False),
        ("tab\there", False),
        ("<script>", False),
    ],
)
def test_display_name_rules(name: str, ok: bool) -> None:
    assert (lobby.display_name_problem(name) is None) is ok


def test_default_display_name_is_derived_from_the_player_id() -> None:
    assert lobby.default_display_name("alice") == "alice"
    derived = lobby.default_display_name("alice@example.com")
    assert derived.startswith("Player-") and len(derived) == len("Player-") + 8
    assert lobby.display_name_problem(derived) is None
    assert derived == lobby.default_display_name("alice@example.com")
    assert derived != lobby.default_display_name("bob@example.com")
    assert lobby.PlayerSettings("x" * 30).shown_name.startswith("Player-")


def test_update_changes_only_named_fields_and_counts_versions() -> None:
    start = lobby.PlayerSettings("p1")
    assert start.version == 0 and start.name_is_default and start.shown_name == "p1"
    s1, changed = lobby.apply_update(
        start, lobby.SettingsUpdate(display_name="Ace", muck_losing_hands=True)
    )
    assert changed and s1.version == 1 and s1.shown_name == "Ace" and s1.muck_losing_hands
    assert (s1.muck_winning_hands, s1.alert_sounds, s1.sound_fx) == (False, True, True)
    same, changed = lobby.apply_update(s1, lobby.SettingsUpdate(muck_losing_hands=True))
    assert not changed and same is s1
    s2, changed = lobby.apply_update(s1, lobby.SettingsUpdate(display_name=""))
    assert changed and s2.name_is_default and s2.shown_name == "p1" and s2.version == 2
    # Choosing the default name explicitly is the default.
    s3, changed = lobby.apply_update(s1, lobby.SettingsUpdate(display_name="p1"))
    assert changed and s3.display_name == "" and s3.name_is_default


def test_update_refusals() -> None:
    s = lobby.PlayerSettings("p1", version=3)
    with pytest.raises(lobby.InvalidDisplayName):
        lobby.apply_update(s, lobby.SettingsUpdate(display_name="x" * 25))
    with pytest.raises(lobby.SettingsVersionConflict) as err:
        lobby.apply_update(s, lobby.SettingsUpdate(sound_fx=False, expected_version=2))
    assert (err.value.expected, err.value.actual) == (2, 3)
    ok, changed = lobby.apply_update(s, lobby.SettingsUpdate(sound_fx=False, expected_version=3))
    assert changed and ok.version == 4


# ------------------------------------------------------------------------- cancellation


def test_which_tables_can_be_cancelled() -> None:
    assert lobby.check_cancellable("t", "registering", False)
    assert lobby.check_cancellable("t", "filled", False)
    assert not lobby.check_cancellable("t", "cancelled", False)  # once: a no-op after
    for status, started in (("filled", True), ("running", True), ("finished", True)):
        with pytest.raises(lobby.TableNotCancellable):
            lobby.check_cancellable("t", status, started)


def test_cancellation_owes_one_unwind_per_entry() -> None:
    ops = lobby.cancellation_ops(
        [("e1", "buyin-e1", "p1"), ("e2", "buyin-e2", "p2")], buy_in_cents=500
    )
    assert [(o.entry_id, o.kind, o.transfer_id, o.player_id, o.amount_cents) for o in ops] == [
        ("e1", lobby.OpKind.UNWIND, "buyin-e1", "p1", 500),
        ("e2", lobby.OpKind.UNWIND, "buyin-e2", "p2", 500),
    ]
    assert len({o.op_id for o in ops}) == 2


def test_unwind_voids_a_pending_reservation_and_leaves_a_voided_one() -> None:
    steps = lobby.unwind_steps(
        "e1",
        "buyin-e1",
        buy_in=lobby.TransferState.PENDING,
        buy_in_cents=500,
        rake_posted_cents=0,
        net_posted_cents=0,
    )
    assert [(s.kind, s.transfer_id) for s in steps] == [(lobby.StepKind.VOID, "buyin-e1")]
    for state in (lobby.TransferState.VOIDED, lobby.TransferState.MISSING):
        assert (
            lobby.unwind_steps(
                "e1",
                "buyin-e1",
                buy_in=state,
                buy_in_cents=500,
                rake_posted_cents=0,
                net_posted_cents=0,
            )
            == []
        )


@pytest.mark.parametrize(("rake", "net"), [(35, 465), (35, 0), (0, 0)])
def test_unwind_refunds_a_posted_buy_in_whole_after_moving_the_split_back(
    rake: int, net: int
) -> None:
    steps = lobby.unwind_steps(
        "e1",
        "buyin-e1",
        buy_in=lobby.TransferState.POSTED,
        buy_in_cents=500,
        rake_posted_cents=rake,
        net_posted_cents=net,
    )
    moves = [(s.source, s.target, s.amount_cents) for s in steps[:-1]]
    expected = []
    if rake:
        expected.append((Account.RAKE, Account.ESCROW, rake))
    if net:
        expected.append((Account.PRIZE_RESERVE, Account.ESCROW, net))
    assert moves == expected
    refund = steps[-1]
    assert refund.kind is lobby.StepKind.REFUND
    assert (refund.source, refund.amount_cents, refund.stake_transfer_id) == (
        Account.ESCROW,
        500,
        "buyin-e1",
    )
    assert refund.transfer_id == lobby.refund_transfer_id("e1")
    assert len({s.transfer_id for s in steps}) == len(steps)


# ------------------------------------------------------------------------- lobby catalogue


@pytest.mark.parametrize(
    ("shares", "bps"),
    [((1,), (10_000,)), ((8, 1, 1), (8000, 1000, 1000)), ((1, 1, 1), (3334, 3333, 3333))],
)
def test_share_bps_sum_to_10000(shares: tuple[int, ...], bps: tuple[int, ...]) -> None:
    assert lobby.share_bps(shares) == bps


def test_pay_table_lines_follow_the_configuration() -> None:
    config = default_config()
    lines = lobby.pay_table_lines(config, 500)
    assert [line.multiplier for line in lines] == [e.multiplier for e in config.pay_table.entries]
    assert sum(line.weight for line in lines) == config.pay_table.weight_total
    for line, entry in zip(lines, config.pay_table.entries, strict=True):
        assert line.prize_pool_cents == entry.multiplier * 500
        assert sum(p.amount_cents for p in line.prizes) == line.prize_pool_cents
        assert sum(p.share_bps for p in line.prizes) == 10_000
        assert len(line.levels) == entry.levels
        assert line.clock_ms == entry.levels * config.level_duration_ms
    by_multiplier = {line.multiplier: line for line in lines}
    # Seed 000: 2x-5x → 6 minutes until Electric Mode, 10x → 8, 100x → 10, 1,000x+ → 12.
    minutes = {m: line.clock_ms // 60_000 for m, line in by_multiplier.items()}
    assert minutes == {2: 6, 3: 6, 4: 6, 5: 6, 10: 8, 100: 10, 1000: 12, 10000: 12}
    # Winner takes all shows 10000, not 0.
    assert [(p.place, p.share_bps) for p in by_multiplier[2].prizes] == [(1, 10_000)]
