"""The KRaft metadata-log codec: bytes <-> batches <-> typed records, without Spark.

Modules, from the bytes up: `errors`, `wire` (varints, primitives), `compression` (the
codecs' C libraries), `batch` (RecordBatch v2 framing, CRC-32C, damaged-region recovery),
`schema` + `message` (the schema-driven body codec over schemas/records), `records`
(metadata frames and control records), `redact`, `logfiles` (segments, snapshots, log
directories, any path `kraftlake decode` takes), `columnar` (a whole file straight into Arrow
columns, NoOp runs vectorised with numpy), `dumplog` (kafka-dump-log text).
"""
