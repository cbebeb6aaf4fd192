"""What a job is told when another writer got in its way, importable without Spark (the
command line maps it to one line and exit status 1 before anything loads pyspark)."""


class SliceMovedError(RuntimeError):
    """Another job committed into the slice an increment is replacing, after the increment
    read it: replacing it would drop that job's rows (`Lake.replace`)."""
