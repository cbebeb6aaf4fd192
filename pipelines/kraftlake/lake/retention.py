"""How long vacuum keeps files no current snapshot references.

Its own module, free of pyspark, so that `kraftlake maintain` refuses a retention shorter
than this before Spark is loaded (`cli.maintain`); `lake.maintain` vacuums with it.
"""

DEFAULT_RETENTION_HOURS = 168  # Delta's default `delta.deletedFileRetentionDuration`: 7 days
