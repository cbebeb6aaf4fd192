"""The Delta lake, through delta-spark: table schemas (`schema`), reads and idempotent writes
(`delta`), maintenance (`maintain`), per-run work frames (`work`) and the Hadoop-FS
bookkeeping files (`hadoopfs`)."""
