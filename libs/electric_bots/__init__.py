"""electric_bots."""
