"""The plain sequential replay of a metadata log (`replay`): the simulator's controller
image and the benchmarks' baseline, not used by any ingest or stream job."""
