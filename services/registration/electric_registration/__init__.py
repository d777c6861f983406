"""The registration service."""
