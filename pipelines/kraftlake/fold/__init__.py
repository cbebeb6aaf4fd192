"""Silver partition changes, and the per-partition kernel that folds them into the gold rows."""
