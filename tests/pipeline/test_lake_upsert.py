"""Lake.upsert on real Delta tables: an increment that only deletes partitions."""

from __future__ import annotations

import pyarrow as pa

from kraftlake.lake.delta import Lake
from kraftlake.lake.schema import table_schema


def _current_row(cluster: str, topic: str, partition: int) -> dict:
    row: dict = {}
    for f in table_schema("partition_current").arrow:
        if pa.types.is_list(f.type):
            row[f.name] = []
        elif pa.types.is_integer(f.type):
            row[f.name] = 0
        elif pa.types.is_boolean(f.type):
            row[f.name] = False
        elif pa.types.is_timestamp(f.type):
            row[f.name] = None if f.nullable else 0
        else:
            row[f.name] = None if f.nullable else "x"
    row.update(cluster_id=cluster, topic_id=topic, partition_id=partition, topic_name="t",
               leader=1, isr=[1], replicas=[1])
    return row


def test_upsert_with_only_deletions(tmp_path) -> None:
    lake = Lake(tmp_path)
    schema = table_schema("partition_current").arrow
    rows = [_current_row("c", "AAAAAAAAAAAAAAAAAAAAAQ", p) for p in range(3)]
    lake.append("partition_current", pa.Table.from_pylist(rows, schema=schema))
    keys = pa.table({"cluster_id": ["c"], "topic_id": ["AAAAAAAAAAAAAAAAAAAAAQ"],
                     "partition_id": pa.array([1], pa.int32())})
    nothing = schema.empty_table()
    assert lake.upsert("partition_current", nothing, "app", 1, delete_keys=keys)
    left = lake.read_arrow("partition_current").column("partition_id").to_pylist()
    assert sorted(left) == [0, 2]
