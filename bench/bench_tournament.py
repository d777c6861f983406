"""Electric Poker tournament benchmarks: simulated tournaments per second (random, tag,
random bots, virtual time) and the rate of rebuilding the same tournaments from events."""

from __future__ import annotations

import time

from electric_domain.tournament.aggregate import Tournament
from electric_domain.tournament.config import default_config
from electric_math.simulate import make_bots, play, tournament_seed

from bench import Row

N = 200


def run() -> list[Row]:
    cfg = default_config()
    t0 = time.perf_counter()
    played = [
        play(cfg, tournament_seed(99, i), make_bots(("random", "tag", "random"))) for i in range(N)
    ]
    play_s = time.perf_counter() - t0
    hands = sum(p.hands for p in played)
    events = sum(len(p.tournament.history) for p in played)
    t0 = time.perf_counter()
    for p in played:
        Tournament.replay(cfg, p.tournament.history)
    replay_s = time.perf_counter() - t0
    return [
        Row("tournament", "simulated tournaments/s", N / play_s, "1/s",
            note=f"{N} tournaments, {hands / N:.1f} hands each"),
        Row("tournament", "simulated hands/s", hands / play_s, "1/s"),
        Row("tournament", "replay events/s", events / replay_s, "1/s",
            "play events/s", events / play_s, note="fold of the recorded events"),
    ]  # fmt: skip
