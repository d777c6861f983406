"""electric_eventlog."""
