"""The report as one self-contained HTML file: plotly's JavaScript inlined once, styles
inline, every figure followed by a plain table that says the same (readable without the
charts, by a screen reader or by grep)."""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from ..kraft.events import ELR_EVENTS
from ..kraft.partition import RECOVERING
from ..kraft.troubles import OFFLINE, REASSIGNING, RECOVERING_KIND, UNDER_MIN_ISR
from .charts import cluster_figure, partition_figure
from .data import ReportData, recovery_of

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;
color:#222;max-width:1280px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;
margin-top:32px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.loss{color:#b00;font-weight:600}.muted{color:#777}
"""


def _t(ts: dt.datetime | None) -> str:
    return "" if ts is None else ts.strftime("%Y-%m-%d %H:%M:%S")


def _dur(ms: int | None) -> str:
    if ms is None:
        return "still open"
    s = ms / 1000
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _table(head: list[str], rows: list[list[Any]], caption: str = "") -> str:
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    th = "".join(f"<th scope='col'>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table>{cap}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _figure(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def _cause(i: dict[str, Any]) -> str:
    if i["cause_broker"] is not None:
        return f"broker {i['cause_broker']}: {i['cause'].removeprefix('broker_')}"
    return {RECOVERING_KIND: "unclean election (no broker outage: admin or automatic)",
            REASSIGNING: "partition reassignment"}.get(i["cause"], i["cause"])


def _incident_section(data: ReportData, i: dict[str, Any]) -> str:
    iid = i["incident_id"]
    evs = data.incident_events.get(iid, [])
    counts = ", ".join(f"{t} {n}" for t, n in zip(i["event_types"], i["event_partitions"],
                                                   strict=True))
    parts = [f"<section id='{escape(iid)}'><h3>{escape(iid)}: {escape(_cause(i))}</h3>",
             _table(["", ""], [
                 ["started", f"{_t(i['start_ts'])} (offset {i['start_offset']})"],
                 ["ended", f"{_t(i['end_ts'])} (offset {i['end_offset']})"
                  if i["end_offset"] is not None else "<b>still open</b>"],
                 ["time to full recovery", _dur(i["duration_ms"])],
                 ["brokers out of service", ", ".join(map(str, i["brokers"])) or "none"],
                 ["partitions affected", str(i["partitions_affected"])],
                 ["partitions per event type", escape(counts)],
             ])]
    unclean = [e for e in evs if e["event_type"] == "unclean_election"]
    if unclean:
        rows = []
        for e in unclean:
            r = recovery_of(e, evs)  # a recovery ends inside its incident (a trouble)
            rec = (f"recovered {_t(r['timestamp'])} after {_dur(r['recovery_duration_ms'])}"
                   if r else "<b>not recovered in this incident</b>"
                   if e["recovery_started_offset"] is not None
                   else "not tracked (no LeaderRecoveryState in this log)")
            rows.append([f"<span class='loss'>{escape(e['topic_name'])}:"
                         f"{e['partition_id']}</span>", _t(e["timestamp"]), str(e["offset"]),
                         f"{e['new_leader']} (ISR before {e['prev_isr']})",
                         escape(e["detection"] or ""), rec])
        parts.append(_table(["partition (possible data loss)", "unclean election", "offset",
                             "new leader", "detected by", "recovery"], rows,
                            "Unclean leader elections"))
    elr = [e for e in evs if e["event_type"] in ELR_EVENTS]
    if elr:
        rows = [[f"{escape(e['topic_name'])}:{e['partition_id']}", _t(e["timestamp"]),
                 e["event_type"], f"+{e['elr_added']} -{e['elr_removed']}",
                 str(e["new_eligible_leader_replicas"]), str(e["new_last_known_elr"])]
                for e in elr[:50]]
        more = f" (first 50 of {len(elr)})" if len(elr) > 50 else ""
        parts.append(_table(["partition", "time", "event", "ELR change", "ELR",
                             "LastKnownElr"], rows, f"ELR activity{more}"))
    parts.append("</section>")
    return "".join(parts)


def _doubt(state: dict[str, Any]) -> str:
    """`?` after a value of a state carried across unknown offsets."""
    return "?" if state.get("uncertain_since") is not None else ""


def _gaps(data: ReportData) -> str:
    """The offsets that may have held changes and were not read (damaged batches, offsets
    the input lacks, records failing a record-level check): what the history does not
    know."""
    if not data.gaps:
        return ""
    where = ", ".join(f"{g['offset']}..{g['end_offset'] - 1} ({_t(g['timestamp'])})"
                      for g in data.gaps)
    return (f"<p class='loss'>{data.unknown_offsets} offset(s) of this cluster's log are "
            f"unknown (damaged batches, offsets missing from the input or records failing "
            f"a record-level check, which may have held partition changes; kept in the "
            f"quarantine table): "
            f"{escape(where)}. Partition states carried across them are marked ? below and "
            f"in the timeline until a PartitionRecord or a snapshot re-anchors them; the "
            f"chart marks where.</p>")


def _loss(n: int) -> str:
    """A count that is bad news when not 0, marked so."""
    return f"<span class='loss'>{n}</span>" if n else "0"


def render_fleet(pages: list[tuple[ReportData, str]], generated: dt.datetime) -> str:
    """The summary of a lake of several clusters: one row per cluster (its page's file name
    beside it), linking to each cluster's own report."""
    rows = []
    for data, href in pages:
        open_ = sum(i["end_ts"] is None for i in data.incidents)
        rows.append([f"<a href='{escape(href)}'>{escape(data.cluster_id)}</a>",
                     _t(data.first_ts), _t(data.newest_record_ts), _t(data.last_ingested),
                     str(len(data.incidents)), _loss(open_), _loss(len(data.unclean)),
                     _loss(len(data.gaps)), _loss(data.unknown_offsets),
                     _loss(data.troubles_now.get(OFFLINE, 0)),
                     _loss(data.troubles_now.get(UNDER_MIN_ISR, 0))])
    w = pages[0][0].window if pages else None
    span = "" if w is None or (w.since is None and w.until is None) else (
        f" Range {_t(w.since)} .. {_t(w.until)} UTC.")
    body = [f"<h1>kraftlake fleet report: {len(pages)} clusters</h1>",
            f"<p class='muted'>Generated {_t(generated)} UTC.{escape(span)} One report per "
            "cluster, linked below; times are the log's own (UTC).</p>",
            _table(["cluster", "first record", "newest record", "last ingested", "incidents",
                    "open incidents", "unclean elections", "gaps", "unknown offsets",
                    "offline now", "under min ISR now"], rows)]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>kraftlake fleet report</title><style>{STYLE}</style></head><body>"
            + "".join(body) + "</body></html>")


def render(data: ReportData, generated: dt.datetime) -> str:
    """The whole page."""
    w = data.window
    span = f"{_t(w.since or data.first_ts)} .. {_t(w.until or data.last_ts)}"
    inc_rows = [[f"<a href='#{escape(i['incident_id'])}'>{escape(i['incident_id'])}</a>",
                 _t(i["start_ts"]), _dur(i["duration_ms"]), escape(_cause(i)),
                 ", ".join(map(str, i["brokers"])), str(i["partitions_affected"]),
                 str(i["unclean_elections"]),
                 "<span class='loss'>" + escape(", ".join(i["data_loss_partitions"]))
                 + "</span>"] for i in data.incidents]
    body = [
        f"<h1>kraftlake incident report: cluster {escape(data.cluster_id)}</h1>",
        f"<p class='muted'>{escape(span)} UTC. Generated {_t(generated)} UTC; incidents "
        "and intervals read from the partition_intervals and incidents tables. The grouping "
        "rule is in kraftlake's README "
        "(Incidents: the grouping rule).</p>",
        _gaps(data),
        "<h2>Cluster over time</h2>", _figure(cluster_figure(data), "cluster"),
        f"<h2>Incidents ({len(data.incidents)})</h2>",
        _table(["incident", "start (UTC)", "time to full recovery", "cause", "brokers",
                "partitions", "unclean elections", "possible data loss"], inc_rows)
        if inc_rows else "<p>No incident in this range.</p>",
        *[_incident_section(data, i) for i in data.incidents],
        "<h2>Partitions</h2>",
    ]
    for part in data.partitions:
        states = data.states.get(part, [])
        name = f"{part[0]}:{part[1]}"
        rows = [[_t(s["valid_from_ts"]), str(s["valid_from_offset"]), str(s["leader"]) + _doubt(s),
                 f"{s['leader_epoch']}/{s['partition_epoch']}{_doubt(s)}",
                 str(s["isr"]) + _doubt(s),
                 str(s["eligible_leader_replicas"]), str(s["last_known_elr"]),
                 str(s["replicas"]),
                 "RECOVERING" if s["leader_recovery_state"] == RECOVERING else ""]
                for s in states]
        ident = f" <small>topic id {escape(states[-1]['topic_id'])}</small>" if states else ""
        body += [f"<h3 id='p-{escape(name)}'>{escape(name)}{ident}</h3>",
                 _figure(partition_figure(data, part), f"p-{len(body)}"),
                 "<details><summary>states</summary>",
                 _table(["from (UTC)", "offset", "leader", "epochs L/P", "ISR", "ELR",
                         "LastKnownElr", "replicas", "recovery"], rows), "</details>"]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>kraftlake incident report {escape(data.cluster_id)}</title>"
            f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
            + "".join(body) + "</body></html>")
