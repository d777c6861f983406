"""The soak run's growth bound (tools/soak/bounds.py) and label check (tools/soak/labels.py)
on synthetic samples: what passes, and that each rule fails when its resource grows."""

from __future__ import annotations

from tools.soak.bounds import Bounds, check, settled, slope_per_hour
from tools.soak.labels import label_problems

B = Bounds(retention_s=60, interval_s=60)


def _rows(minutes: int = 20, **grow: float) -> list[dict[str, float]]:
    """A flat, healthy run of ``minutes`` samples plus one settled sample after the load;
    ``grow`` adds a per-minute increase to a column."""
    rows = []
    for m in range(minutes):
        row = {
            "t": m * 60.0,
            "phase": 1.0,
            "rss_mb.table": 120.0 + (m % 3) * 0.5,
            "fds.table": 30.0,
            "series.table": 350.0,
            "tables_in_memory": 4.0,
            "live_tables": 2.0,
            "tournaments_finished": 2.0 * m + 2.0,
            "lag.g": 5.0,
        }
        for col, per_min in grow.items():
            row[col] = row.get(col, 0.0) + per_min * m
        rows.append(row)
    last = {**rows[-1], "t": minutes * 60.0, "phase": 0.0, "tables_in_memory": 0.0}
    rows.append({**last, "live_tables": 0.0, "lag.g": 0.0})
    return rows


def test_slope() -> None:
    assert slope_per_hour([(0, 100), (1800, 110), (3600, 120)]) == 20.0
    assert slope_per_hour([(0, 5)]) == 0.0


def test_a_flat_run_passes() -> None:
    assert check(_rows(), B) == []
    assert settled(_rows()[-1]) and not settled(_rows()[0])


def test_rss_growth_beyond_the_bound_fails_and_small_steps_pass() -> None:
    assert any("RSS of table" in v for v in check(_rows(**{"rss_mb.table": 1.0}), B))
    # 0.4 MiB/min = 24 MiB/h: under 30 MiB/h.
    assert check(_rows(**{"rss_mb.table": 0.4}), B) == []
    # Fast but tiny (a 2-minute run): the fitted growth is under the 6 MiB step.
    assert check(_rows(minutes=4, **{"rss_mb.table": 1.0}), B) == []


def test_descriptor_and_series_growth_fail() -> None:
    assert any("open descriptors" in v for v in check(_rows(**{"fds.table": 2.0}), B))
    assert any("metric series" in v for v in check(_rows(**{"series.table": 10.0}), B))


def test_finished_tables_kept_in_memory_fail() -> None:
    # Every finished tournament stays held: more than finished within the retention window.
    kept = _rows(**{"tables_in_memory": 2.0})
    assert any("finished tables held" in v for v in check(kept, B))
    # Held after the load although nothing is live.
    stuck = _rows()
    stuck[-1]["tables_in_memory"] = 3.0
    assert any("stay in memory" in v for v in check(stuck, B))


def test_lag_not_back_to_zero_fails() -> None:
    rows = _rows()
    rows[-1]["lag.g"] = 7.0
    assert any("lag.g" in v for v in check(rows, B))


def test_labels_naming_ids_fail() -> None:
    ok = {"table": [("grpc_requests_total", {"method": "Act", "code": "OK"}, 1.0)]}
    assert label_problems(ok, ["player-1", "table-abcdef"]) == []
    by_table = {"table": [("x_total", {"table": "t-table-abcdef"}, 1.0)]}
    assert label_problems(by_table, ["table-abcdef"])
    uuid_like = {"payout": [("y", {"round": "0f8fad5b-d9cb-469f-a165-70867728950e"}, 1.0)]}
    assert label_problems(uuid_like, [])
    many = {"wallet": [("z", {"k": str(n)}, 1.0) for n in range(61)]}
    assert label_problems(many, [])


def test_durations_of_make_soak() -> None:
    import argparse

    import pytest

    from tools.soak.__main__ import seconds

    assert [seconds(x) for x in ("600", "90s", "10m", "1h", "1h30m")] == [
        600,
        90,
        600,
        3600,
        5400,
    ]
    with pytest.raises(argparse.ArgumentTypeError):
        seconds("ten minutes")
