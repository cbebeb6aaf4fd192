"""Topic configs the rules depend on, resolved the way Kafka resolves them.

`min.insync.replicas` (apache/kafka at the commit docs/semantics.md section 0 names):

* resolution, `ConfigurationControlManager.getTopicConfig` ->
  `KafkaConfigSchema.resolveEffectiveTopicConfig`: the topic's own value if the topic has
  the key, else the dynamic config of the controller's own node, else the cluster default
  (BROKER resource ""), else the controller's static config (server.properties), else the
  ConfigDef default (1). The first level that has the key wins *even if its value is not a
  number*: the lower levels are not consulted. The node level is not modelled (the log
  does not say which node was the active controller when); the static level is kraftlake's
  conf (`min_insync_replicas_default`), whose own default is Kafka's 1.
* parsing, `ReplicationControlManager.getTopicEffectiveMinIsr`: `Integer.parseInt` of that
  value. A value it cannot parse makes the method throw, so Kafka decides nothing with it;
  kraftlake's answer is "unknown" (None): no under-min-ISR verdict is drawn from it.
* two caps, both Kafka's:
  - the controller's ELR threshold, `getTopicEffectiveMinIsr`: min(value, replica count of
    the topic's *partition 0*) (`controller_min_isr`; ReplicationControlManagerTest
    `testEligibleLeaderReplicas_EffectiveMinIsr`);
  - the broker's under-min-ISR test, `kafka.cluster.Partition.effectiveMinIsr` /
    `isUnderMinIsr`: min(value, the partition's *own* replica count)
    (`partition_min_isr`), which is what kraftlake's `under_min_isr` event reports.

`unclean.leader.election.enable`: same resolution, `Boolean.parseBoolean` (true iff the
value equals "true" ignoring case),
`ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`.
"""

from __future__ import annotations

import re
from typing import overload

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
RESOURCE_TOPIC = 2  # ConfigResource.Type.TOPIC
RESOURCE_BROKER = 4  # ConfigResource.Type.BROKER; resource name "" = cluster default
CLUSTER_DEFAULT = ""
KAFKA_DEFAULT_MIN_ISR = 1  # ServerLogConfigs.MIN_IN_SYNC_REPLICAS_DEFAULT

# What `Integer.parseInt` accepts (ASCII digits; the int range is checked separately).
INT_PATTERN = r"^[+-]?[0-9]+$"
_INT = re.compile(INT_PATTERN)
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1


def parse_int(value: str) -> int | None:
    """`Integer.parseInt(value)`, None where it throws."""
    if not _INT.match(value):
        return None
    n = int(value)
    return n if INT_MIN <= n <= INT_MAX else None


def in_force(topic_value: str | None, cluster_value: str | None) -> str | None:
    """The value of the first level that has the key (topic, then cluster default)."""
    return topic_value if topic_value is not None else cluster_value


def resolve_min_isr(topic_value: str | None, cluster_value: str | None,
                    static_default: int = KAFKA_DEFAULT_MIN_ISR) -> int | None:
    """A topic's configured `min.insync.replicas`, uncapped; None = unparseable."""
    value = in_force(topic_value, cluster_value)
    return static_default if value is None else parse_int(value)


@overload
def controller_min_isr(min_isr: int, partition0_replicas: int) -> int: ...
@overload
def controller_min_isr(min_isr: int | None, partition0_replicas: int) -> int | None: ...
def controller_min_isr(min_isr: int | None, partition0_replicas: int) -> int | None:
    """`RCM.getTopicEffectiveMinIsr`: the ELR threshold m of every partition of a topic
    (None, an unparseable configured value, stays None)."""
    return None if min_isr is None else min(min_isr, partition0_replicas)


def partition_min_isr(min_isr: int | None, replicas: int) -> int | None:
    """`Partition.effectiveMinIsr`: the broker's under-min-ISR threshold of one partition."""
    if min_isr is None:
        return None
    return min_isr if min_isr < replicas else replicas  # `min`, called a million times


def unclean_enabled(topic_value: str | None, cluster_value: str | None) -> bool:
    """`uncleanLeaderElectionEnabledForTopic` (`Boolean.parseBoolean`; static default false)."""
    value = in_force(topic_value, cluster_value)
    return value is not None and value.lower() == "true"
