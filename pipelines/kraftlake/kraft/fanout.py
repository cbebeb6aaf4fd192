"""Which partitions a record reaches that does not name them: Kafka's fan-out rule.

Two metadata records change many partitions at once (`records.FAN_OUT_TYPES`):

* RemoveTopicRecord deletes every partition of its topic (by id) that exists when it is
  replayed: `controller/ReplicationControlManager.replay(RemoveTopicRecord)` walks the
  topic's `parts`, `image/TopicsDelta.replay(RemoveTopicRecord)` drops the topic with its
  partitions;
* ClearElrRecord clears ELR and LastKnownElr of every partition of the topic it names, or of
  every topic when the name is empty, existing when it is replayed:
  `ReplicationControlManager.replay(ClearElrRecord)` (`replayClearTopicElrs` by name through
  `topicsByName`, `replayClearAllElrs` over every topic; 4.x). The controller writes one
  for a topic created with its own min.insync.replicas between its TopicRecord and its
  PartitionRecords (`ConfigurationControlManager.createClearElrRecordsAsNeeded`), so a
  partition created after the record is not reached.

Both throw on a topic they cannot find; the metadata loader's fault handler then goes on
with the next record, so the record reaches nothing (`UnknownTopic`).

This module decides the reach only, from the partitions existing at the record: the
sequential replay (`reference.replay`) passes its own image, silver (`fold.silver`) the
partitions an increment knows at each record's offset, both through `reached`. What the
record does to each partition it reaches is `partition.PartitionRegistration`'s
(`clear_elr`, and `elr_clear_changes` for whether Kafka writes anything), and deletion.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .records import CLEAR_ELR_RECORD, REMOVE_TOPIC_RECORD


class UnknownTopic(LookupError):
    """The record names a topic that does not exist at that point (Kafka throws, and the
    record changes nothing)."""


def reached(record_type: str, topic_id: str | None, topic_name: str | None,
            partitions: Mapping[str, Iterable[int]], topic_ids: Mapping[str, str]
            ) -> list[tuple[str, int]]:
    """The (topic id, partition id) pairs a RemoveTopicRecord or a ClearElrRecord reaches.

    `topic_id`: a RemoveTopicRecord's TopicId; `topic_name`: a ClearElrRecord's TopicName
    (empty or None: every topic); `partitions`: topic id -> partition ids, every topic that
    exists at the record (a topic without partitions yet with none), in the order the caller
    keeps them; `topic_ids`: topic name -> id of those topics (`topicsByName`).

    The pairs come topic by topic in `partitions`' order (Kafka's maps are hash maps, no
    order to follow) and by partition id within a topic. Raises `UnknownTopic` for a
    RemoveTopicRecord of a topic that does not exist and a ClearElrRecord naming one.
    """
    if record_type == REMOVE_TOPIC_RECORD:
        if topic_id is None or topic_id not in partitions:
            raise UnknownTopic(f"RemoveTopicRecord for unknown {topic_id}")
        topics = [topic_id]
    elif record_type == CLEAR_ELR_RECORD:
        if topic_name:
            tid = topic_ids.get(topic_name)
            if tid is None:
                raise UnknownTopic(f"ClearElrRecord for unknown {topic_name}")
            topics = [tid]
        else:
            topics = list(partitions)
    else:
        raise ValueError(f"a {record_type} reaches only the partition it names")
    return [(tid, pid) for tid in topics for pid in sorted(partitions.get(tid, ()))]
