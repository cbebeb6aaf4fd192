"""Cluster simulator: real KRaft metadata-log bytes from a controller model, with ground truth."""
