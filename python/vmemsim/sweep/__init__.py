"""Experiment sweeps (placeholder package file on the ``ray`` branch; the lead's version of
this file replaces it at merge)."""
