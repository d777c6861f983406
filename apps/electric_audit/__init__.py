"""electric_audit."""
