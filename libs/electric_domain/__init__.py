"""electric_domain."""
