"""The demo's console report: the incidents a lake holds, as readable tables.

`kraftlake demo` prints it after ingesting (and then, for a simulated cluster, the check
against the simulator's ground truth: `simulate.score.print_score`); a notebook can print the
same with a rich `Console` and the `partition_events` rows of one cluster
(`report.data.lake_events`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from ..kraft.events import EVENT_TYPES


def _when(ts: Any) -> str:
    if isinstance(ts, dt.datetime):
        return ts.strftime("%m-%d %H:%M:%S")
    return str(ts)


def _dur(ms: int | None) -> str:
    if ms is None:
        return "?"
    s = ms / 1000
    if s < 120:
        return f"{s:.1f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"


def _tp(e: dict[str, Any]) -> str:
    return f"{e['topic_name']}:{e['partition_id']}"


def _ids(v: list[int] | None) -> str:
    return "[" + ",".join(str(x) for x in (v or [])) + "]"


def print_incidents(console: Console, events: list[dict[str, Any]]) -> None:
    """Print the incidents of `events` (one cluster's `partition_events` rows) as readable
    tables.

    Args:
        console: a `rich` console to print on.
        events: `lake_events`' rows of one cluster.

    Example:
        >>> import io
        >>> from rich.console import Console
        >>> from kraftlake import print_incidents
        >>> out = io.StringIO()
        >>> print_incidents(Console(file=out, width=100), [])
        >>> out.getvalue().splitlines()[0]
        'Unclean leader elections: 0 on 0 partitions (detection: )'
    """
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in sorted(events, key=lambda e: (e["offset"], e["topic_name"] or "",
                                           e["partition_id"])):
        by_type.setdefault(e["event_type"], []).append(e)

    # unclean elections, each with the recovery that ended its RECOVERING period
    recov: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in by_type.get("recovery_completed", []):
        recov.setdefault((r["topic_id"], r["partition_id"]), []).append(r)

    def recovery_of(e: dict[str, Any]) -> dict[str, Any] | None:
        later = [r for r in recov.get((e["topic_id"], e["partition_id"]), [])
                 if r["offset"] > e["offset"]]
        return later[0] if later else None

    unclean = by_type.get("unclean_election", [])
    rules = Counter(e["detection"] for e in unclean)
    console.print(f"[bold]Unclean leader elections: {len(unclean)}[/] on "
                  f"{len({(e['topic_id'], e['partition_id']) for e in unclean})} partitions "
                  f"(detection: {', '.join(f'{k} {v}' for k, v in rules.most_common())})")
    # one row per incident: same second, rule and new leader (a broker failure elects many
    # partitions at once); the partitions, offsets and recoveries of the group
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for e in unclean:
        ts = e["timestamp"]
        key = (ts.replace(microsecond=0) if isinstance(ts, dt.datetime) else ts,
               e["detection"], e["new_leader"])
        groups.setdefault(key, []).append(e)
    t = Table(title_justify="left")
    for c in ("time", "detection", "new leader", "partitions (topic:partition)", "offsets",
              "recovery"):
        t.add_column(c)
    for (ts, det, new_leader), es in groups.items():
        recs = [recovery_of(e) for e in es]
        done = [r["recovery_duration_ms"] for r in recs if r is not None]
        stuck = len(recs) - len(done)
        parts = ", ".join(_tp(e) for e in es[:3]) + (f" (+{len(es) - 3})" if len(es) > 3 else "")
        offs = str(es[0]["offset"]) if len(es) == 1 else f"{es[0]['offset']}-{es[-1]['offset']}"
        status = []
        if done:
            span = _dur(min(done)) if min(done) == max(done) else \
                f"{_dur(min(done))} - {_dur(max(done))}"
            status.append(f"[green]{len(done)} recovered[/] after {span}")
        if stuck:
            status.append(f"[red]{stuck} still RECOVERING[/]")
        t.add_row(_when(ts), det or "", str(new_leader), parts, offs, "; ".join(status))
    console.print(t)
    for e in unclean:
        if recovery_of(e) is None and e is max(
                (x for x in unclean if (x["topic_id"], x["partition_id"]) ==
                 (e["topic_id"], e["partition_id"])), key=lambda x: x["offset"]):
            console.print(f"  still RECOVERING: {_tp(e)} (unclean election at offset "
                          f"{e['offset']}, leader {e['new_leader']})")

    ec, ee = by_type.get("elr_change", []), by_type.get("elr_election", [])
    t = Table(title=f"Eligible leader replicas: {len(ec)} elr_change, {len(ee)} elr_election",
              title_justify="left")
    for c in ("event", "partition", "offset", "time", "ELR before -> after",
              "LastKnownElr before -> after", "leader"):
        t.add_column(c)
    for e in ee[:5] + ec[:5]:
        t.add_row(e["event_type"], _tp(e), str(e["offset"]), _when(e["timestamp"]),
                  f"{_ids(e['prev_eligible_leader_replicas'])} -> "
                  f"{_ids(e['new_eligible_leader_replicas'])}",
                  f"{_ids(e['prev_last_known_elr'])} -> {_ids(e['new_last_known_elr'])}",
                  f"{e['prev_leader']} -> {e['new_leader']}")
    console.print(t)

    t = Table(title="All events", title_justify="left")
    for c in ("event type", "count", "partitions"):
        t.add_column(c, justify="right" if c != "event type" else "left")
    for name in EVENT_TYPES:
        rows = by_type.get(name, [])
        t.add_row(name, str(len(rows)),
                  str(len({(r["topic_id"], r["partition_id"]) for r in rows})))
    console.print(t)

