"""Kafka's metadata record layouts (`records/`, with `redaction.json`) and the lake's table
schemas (`tables/`): data, read through `kraftlake.packaged.SCHEMAS`.

This file only makes the folder the package `kraftlake.schemas`, so that it ships in the
wheel and an editable install finds it too.
"""
