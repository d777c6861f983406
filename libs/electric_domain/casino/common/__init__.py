"""Shared by the casino games: money, configuration, game numbers, void (malfunction)."""
