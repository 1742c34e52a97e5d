"""Python-hosted engines."""
