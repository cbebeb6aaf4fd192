"""Delta Lake IO through delta-rs: table schemas, idempotent commits, reading into Spark."""
