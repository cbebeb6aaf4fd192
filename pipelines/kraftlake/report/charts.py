"""The report's plotly figures: the cluster over time and one partition's replicas over time.

Lanes are horizontal bars on a date axis (what `plotly.express.timeline` draws: `base` = the
start, `x` = the length in ms), one trace per state so the legend explains the colours.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kraft.brokers import broker_state
from ..kraft.partition import RECOVERING
from ..kraft.troubles import (
    OFFLINE,
    REASSIGNING,
    RECOVERING_KIND,
    SINGLE_ISR,
    UNDER_MIN_ISR,
    UNDER_REPLICATED,
)
from .data import ReportData

BROKER_COLOURS = {"unfenced": "#2ca02c", "fenced": "#d62728",
                  "controlled shutdown": "#ff7f0e", "unregistered": "#7f7f7f"}
ROLE_COLOURS = {"leader": "#1f77b4", "in ISR": "#2ca02c", "ELR": "#ff7f0e",
                "LastKnownElr": "#9467bd", "out of sync": "#c7c7c7"}
# one line per kind of partition_intervals (kraft.troubles.KINDS), the worst first
KIND_COLOURS = {OFFLINE: "#d62728", UNDER_MIN_ISR: "#ff7f0e", RECOVERING_KIND: "#9467bd",
                REASSIGNING: "#8c564b", SINGLE_ISR: "#e377c2", UNDER_REPLICATED: "#1f77b4"}
INCIDENT_FILL = "rgba(214, 39, 40, 0.12)"
LABELLED_INCIDENTS = 8  # more labels overlap; the incidents table names them all


def now() -> dt.datetime:
    """Naive UTC, like the timestamps Spark hands back (the session time zone is UTC)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _ms(a: dt.datetime, b: dt.datetime) -> float:
    return max((b - a).total_seconds() * 1000, 1.0)


def _lanes(fig: go.Figure, bars: dict[str, list[tuple]], colours: dict[str, str],
           row: int | None = None, legendgroup: str = "") -> None:
    """bars: state -> [(lane, start, end, hover)]."""
    for state, colour in colours.items():
        items = bars.get(state)
        if not items:
            continue
        trace = go.Bar(
            orientation="h", name=state, legendgroup=legendgroup or state,
            y=[b[0] for b in items], base=[b[1].isoformat() for b in items],
            x=[_ms(b[1], b[2]) for b in items], marker_color=colour,
            hovertext=[b[3] for b in items], hoverinfo="text")
        if row is None:
            fig.add_trace(trace)
        else:
            fig.add_trace(trace, row=row, col=1)


def _label(s: dict[str, Any]) -> str:
    if not s.get("registered", True):
        return "unregistered"
    if s.get("ics"):
        return "controlled shutdown"
    return "fenced" if s.get("fenced", True) else "unfenced"


def _broker_bars(data: ReportData, end: dt.datetime) -> dict[str, list[tuple]]:
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in data.brokers:
        by[r["broker_id"]].append(r)
    bars: dict[str, list[tuple]] = defaultdict(list)
    for bid in sorted(by):
        state: dict[str, Any] = {}
        rows = by[bid]
        for i, r in enumerate(rows):
            state = broker_state(r, state)
            nxt = rows[i + 1]["timestamp"] if i + 1 < len(rows) else end
            label = _label(state)
            bars[label].append((f"broker {bid}", r["timestamp"], nxt,
                                f"broker {bid}: {label}<br>{r['record_type']} at offset "
                                f"{r['offset']}, epoch {state.get('epoch')}"))
    return bars


def _count_steps(intervals: list[dict[str, Any]], kind: str, end: dt.datetime
                 ) -> tuple[list[dt.datetime], list[int]]:
    """Step line of how many partitions are in `kind` over time."""
    deltas: dict[dt.datetime, int] = defaultdict(int)
    for i in intervals:
        if i["kind"] == kind and i["start_ts"] is not None:
            deltas[i["start_ts"]] += 1
            if i["end_ts"] is not None:
                deltas[i["end_ts"]] -= 1
    xs, ys, n = [], [], 0
    for t in sorted(deltas):
        n += deltas[t]
        xs.append(t)
        ys.append(n)
    if xs:
        xs.append(end)
        ys.append(n)
    return xs, ys


def _incident_bands(fig: go.Figure, incidents: list[dict[str, Any]], end: dt.datetime) -> None:
    """Each incident's time shaded behind every subplot: the shapes plotly's `add_vrect` makes,
    set in one layout update. `add_vrect` validates the figure's every shape again at each
    call: for a lake of 19 incidents, a call per incident in each of the report's 11 charts
    took about 3 of a cold `report`'s 30-40 CPU s."""
    names = sorted((k for k in fig.layout if k.startswith("xaxis")), key=lambda k: int(k[5:] or 1))
    axes = [(f"x{k[5:]}", fig.layout[k].anchor or "y") for k in names]  # x, y; x2, y2; ...
    fig.update_layout(shapes=[*fig.layout.shapes, *(
        {"type": "rect", "xref": x, "yref": f"{y} domain", "x0": i["start_ts"],
         "x1": i["end_ts"] or end, "y0": 0, "y1": 1, "fillcolor": INCIDENT_FILL,
         "line": {"width": 0}, "layer": "below"}
        for i in incidents for x, y in axes)])


def cluster_figure(data: ReportData) -> go.Figure:
    """Brokers' registration lanes; how many partitions are in each trouble kind (every kind
    the intervals table holds, one line each); incidents shaded; unclean elections as
    markers."""
    end = data.last_ts or now()
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.45, 0.55],
                        vertical_spacing=0.06,
                        subplot_titles=("brokers", "partitions in trouble, by kind"))
    _lanes(fig, _broker_bars(data, end), BROKER_COLOURS, row=1)
    for kind, colour in KIND_COLOURS.items():
        xs, ys = _count_steps(data.intervals, kind, end)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line_shape="hv", name=kind,
                                 line_color=colour), row=2, col=1)
    if data.unclean:
        fig.add_trace(go.Scatter(
            x=[e["timestamp"] for e in data.unclean], y=[0] * len(data.unclean),
            mode="markers", marker={"symbol": "x", "size": 11, "color": "black"},
            name="unclean election",
            hovertext=[f"unclean election {e['topic_name']}:{e['partition_id']} -> leader "
                       f"{e['new_leader']} (offset {e['offset']})" for e in data.unclean],
            hoverinfo="text"), row=2, col=1)
    for g in data.gaps:  # the states after it are uncertain until re-anchored
        if g["timestamp"] is not None:
            fig.add_vline(x=g["timestamp"], line_dash="dot", line_color="black",
                          line_width=1)
            fig.add_annotation(x=g["timestamp"], y=0.0, yref="paper", showarrow=False,
                               text=f"offsets {g['offset']}..{g['end_offset'] - 1} unknown",
                               xanchor="left", font={"size": 9})
    _incident_bands(fig, data.incidents, end)
    if len(data.incidents) <= LABELLED_INCIDENTS:
        for i in data.incidents:
            fig.add_annotation(x=i["start_ts"], y=1.0, yref="paper", text=i["incident_id"],
                               showarrow=False, xanchor="left", font={"size": 9})
    fig.update_layout(barmode="overlay", height=520, margin={"l": 90, "r": 20, "t": 40,
                                                              "b": 30},
                      legend={"orientation": "h", "y": -0.08})
    fig.update_xaxes(type="date", range=[data.window.since or data.first_ts,
                                          data.window.until or end])
    return fig


def _role(b: int, s: dict[str, Any]) -> str:
    if b == s["leader"]:
        return "leader"
    if b in (s["isr"] or []):
        return "in ISR"
    if b in (s["eligible_leader_replicas"] or []):
        return "ELR"
    if b in (s["last_known_elr"] or []):
        return "LastKnownElr"
    return "out of sync"


def partition_figure(data: ReportData, part: tuple[str, int]) -> go.Figure:
    """Leader, ISR, ELR and LastKnownElr of one partition, one lane per broker."""
    end = data.last_ts or now()
    bars: dict[str, list[tuple]] = defaultdict(list)
    for s in data.states.get(part, []):
        stop = s["valid_to_ts"] or end
        brokers = sorted(set(s["replicas"] or []) | set(s["eligible_leader_replicas"] or [])
                         | set(s["last_known_elr"] or []))
        for b in brokers:
            role = _role(b, s)
            rec = " RECOVERING" if s["leader_recovery_state"] == RECOVERING else ""
            bars[role].append((f"broker {b}", s["valid_from_ts"], stop,
                               f"broker {b}: {role}{rec}<br>leader {s['leader']}, leader epoch "
                               f"{s['leader_epoch']}, partition epoch {s['partition_epoch']}"
                               f"<br>ISR {s['isr']} ELR {s['eligible_leader_replicas']} "
                               f"LastKnownElr {s['last_known_elr']}<br>from offset "
                               f"{s['valid_from_offset']}"))
    fig = go.Figure()
    _lanes(fig, bars, ROLE_COLOURS)
    _incident_bands(fig, data.incidents, end)
    fig.update_layout(barmode="overlay", height=80 + 34 * max(1, len({b[0] for v in bars.values()
                                                                      for b in v})),
                      margin={"l": 90, "r": 20, "t": 10, "b": 30},
                      legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(type="date", range=[data.window.since or data.first_ts,
                                          data.window.until or end])
    fig.update_yaxes(categoryorder="category descending")
    return fig
