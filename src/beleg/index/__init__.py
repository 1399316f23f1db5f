"""Beleg."""
