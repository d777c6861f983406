"""electric_platform."""
