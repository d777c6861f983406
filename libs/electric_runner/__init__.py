"""electric_runner."""
