"""Cluster simulator: real KRaft metadata-log bytes from a controller model, with ground truth.

`run.simulate_cluster` is the entry point (the CLI, the demo, tests and benchmarks);
`scenarios` drives `cluster` (the simulated cluster over the `controller` model), `writer`
writes the log's bytes, `labels` the ground truth, and `score` compares what the pipeline
found with it. See README.md beside this file for the model and the label rules.
"""
