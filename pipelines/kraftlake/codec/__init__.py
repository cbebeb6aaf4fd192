"""The KRaft metadata-log codec: bytes <-> batches <-> typed records, in pure Python.

Modules, from the bytes up: `wire` (varints, primitives), `compression`, `batch`
(RecordBatch v2 framing, CRC-32C, damaged-region recovery), `schema` + `message` (the
schema-driven body codec over schemas/records), `records` (metadata frames and control
records), `redact`, `logfiles` (segments, snapshots, log directories), `dumplog`
(kafka-dump-log text).
"""
