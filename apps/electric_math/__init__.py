"""Exact game math (enumeration, strategies, simulation, reports) over the pure domain."""
