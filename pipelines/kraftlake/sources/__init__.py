"""Spark sources over metadata logs: file discovery, offset->byte planning, the DataSource."""
