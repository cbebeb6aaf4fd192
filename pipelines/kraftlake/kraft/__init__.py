"""Kafka's KRaft rules, in one place: the top of kraftlake's import order.

Every other layer (the Spark fold, silver, event detection, reconciliation, quality, the
simulator and the sequential reference replay) imports its constants and rules from here,
so each rule of docs/semantics.md is written once. Modelled on Kafka's
metadata module (`PartitionRegistration` is an immutable value whose `merge` is the only
place a change is applied; `PartitionChangeBuilder` is the only place one is decided):

* `versions`: metadata.version feature levels and the gates kraftlake needs;
* `records`: record type names, metadata-transaction markers and their rule;
* `fanout`: which partitions a RemoveTopicRecord or a ClearElrRecord reaches (the
  partitions existing at it: the replay's image, silver's at each offset);
* `partition`: sentinels, LeaderRecoveryState, directory ids, the state columns, and
  `PartitionRegistration` (PartitionRecord -> state, PartitionChangeRecord merge, ClearElr);
* `configs`: `min.insync.replicas` / `unclean.leader.election.enable` resolution and the
  two "effective min ISR" caps Kafka uses;
* `builder`: `PartitionChangeBuilder` (elections, ELR, LastKnownElr, reassignments);
* `events`: the event types kraftlake flags and the rules that name the events of one
  partition step (`step_events`), which the fold's kernel calls;
* `troubles`: the kinds of trouble one partition state is in (`partition_intervals`);
* `timing`: replica.lag.time.max.ms and broker.session.timeout.ms (Kafka's defaults, the
  log's values): how long before an outage the troubles it caused can start (incidents),
  and the window in force at an offset;
* `brokers`: a broker's registration state after each of its records, whether it is in
  service (the incidents, the report and the sequential replay), and which registered
  brokers are fenced;
* `gauges`: the controller's gauges of its metadata image (offline partitions, preferred
  replica imbalance, active and fenced brokers, topics, partitions), counted from states;
* `snapshots`: which snapshot a read resets from once retention deleted the log's head (the
  pipeline's plans and the sequential replay).

Nothing here imports the codec, Spark or any other kraftlake layer.
"""
