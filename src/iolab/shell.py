"""Quoting for paths in job scripts that may hold job-time variables such as $DW_JOB_STRIPED."""

from __future__ import annotations


def dq(text: str) -> str:
    """Double-quote for bash: spaces and globs are literal, $VAR and ${VAR} still expand."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return f'"{escaped}"'
