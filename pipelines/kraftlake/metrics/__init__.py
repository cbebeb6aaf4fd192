"""Live gauges of a running `kraftlake stream`, in Prometheus's text format.

The stream holds each cluster's state between micro-batches (`jobs.seed`: partition_current,
the open intervals and incidents, brokers, progress rows); after each micro-batch the
numbers are counted from it once (`state.count`, with Kafka's rules from `kraft`), and a
scrape only prints the numbers last counted (`exposition`): no Spark job, no read of the
lake. `watch` is what the stream calls: at its start (the event counters continue from the
lake's events), after each micro-batch, at a restart and a failure.
"""
