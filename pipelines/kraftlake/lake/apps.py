"""The Delta transaction app ids kraftlake's jobs commit under, and what an id says.

Every increment commits each table with a transaction id (app id, version), and its last
commit is its `ingest_progress` row with the same id. The id names the job kind and the
cluster, so a reader can tell from a table's transactions alone which cluster has an
increment under way there (`lake.cut`).
"""

from __future__ import annotations

import json

# The job kinds whose transactions are increments ending in an `ingest_progress` row; a
# refused input's `quarantine` row (`refusals`) and a quality run's results are not.
INCREMENT_KINDS = ("ingest", "stream")
_PREFIX = "kraftlake-"
# what a commit says of itself (Delta's `userMetadata`): which increment wrote it, and counts
META_APP, META_VERSION = "kraftlake.app_id", "kraftlake.version"


def increment_metadata(info: dict, app_id: str, version: int) -> dict | None:
    """The user metadata of a Delta commitInfo if it is the commit of increment (app_id,
    version), else None (another increment's, or another engine's own metadata)."""
    try:
        meta = json.loads(info.get("userMetadata") or "{}")
    except ValueError:
        return None
    return meta if (isinstance(meta, dict) and meta.get(META_APP) == app_id
                    and meta.get(META_VERSION) == str(version)) else None


# How many commits back an increment's commit of a table is looked for: jobs of other
# clusters may have committed to it since, one commit per table and increment each.
COMMIT_LOOKBACK = 200


def app_id_for(cluster_id: str, kind: str = "ingest") -> str:
    """The Delta transaction app id of one job kind for one cluster.

    A stream and a batch ingest of the same cluster number their increments independently
    (a stream from its checkpoint's batch ids), so they must not share an app id: a stream
    restarted after an ingest would find its next version already committed by the ingest
    and skip a micro-batch whole. Where the lake stands for a cluster is `cluster_progress`,
    whichever job wrote it.
    """
    return f"{_PREFIX}{kind}:{cluster_id}"


def increment_cluster(app_id: str) -> str | None:
    """The cluster whose increments `app_id` numbers; None for any other app id (refusals,
    quality runs, another writer's)."""
    kind, sep, cluster_id = app_id.removeprefix(_PREFIX).partition(":")
    if not app_id.startswith(_PREFIX) or not sep or kind not in INCREMENT_KINDS:
        return None
    return cluster_id
