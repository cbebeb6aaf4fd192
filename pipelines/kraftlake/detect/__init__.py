"""Flagged partition events, derived from the folded timeline with lag() (no per-row Python)."""
