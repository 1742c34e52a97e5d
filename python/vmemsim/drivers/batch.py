"""Batch programs."""
