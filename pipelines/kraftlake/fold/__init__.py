"""Folding the metadata log into per-partition state (reference replay and its invariants)."""
