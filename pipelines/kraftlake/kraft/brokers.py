"""A broker's registration state after each of its records, and whether it is in service.

One rule for every reader of broker records: the incidents' broker outages
(`incidents`), the report's broker lanes and its count of fenced brokers (all from the
`brokers` table), and the sequential replay (`reference.replay`, whose image the simulator's
controller asks which brokers are active). Kafka's
controller keeps the same three facts per broker, and a broker is active when registered,
unfenced and not in controlled shutdown (docs/semantics.md 3.1, `CCM.isActive`): a
RegisterBrokerRecord states all of them (fenced unless it says otherwise, not in controlled
shutdown), a fence, unfence or registration change sets only what it holds, and
BrokerRegistrationChangeRecord can only put a broker *into* controlled shutdown (0 is "no
change"); it leaves it by registering again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .records import REGISTER_BROKER_RECORD, UNREGISTER_BROKER_RECORD


def broker_state(r: Mapping[str, Any], prev: Mapping[str, Any]) -> dict[str, Any]:
    """A broker's registration state after its `brokers` row `r` (`prev`: the state before
    it, {} for none): `registered`, `fenced`, `ics` (in controlled shutdown), `epoch`. A key
    no record has told yet is absent. A row without the controlled-shutdown or epoch columns
    (a reader that selected only the fencing) leaves them unknown."""
    t = r["record_type"]
    s = dict(prev)
    if t == REGISTER_BROKER_RECORD:
        s = {"registered": True, "fenced": True if r["fenced"] is None else r["fenced"],
             "ics": bool(r.get("in_controlled_shutdown")), "epoch": r.get("broker_epoch")}
    elif t == UNREGISTER_BROKER_RECORD:
        s["registered"] = False
    else:
        if r["fenced"] is not None:
            s["fenced"] = r["fenced"]
        if r.get("in_controlled_shutdown"):
            s["ics"] = True
    return s


def in_service(s: Mapping[str, Any]) -> bool:
    """Registered (or not known otherwise), known unfenced, not in controlled shutdown."""
    return s.get("registered") is not False and s.get("fenced") is False and not s.get("ics")


def fenced_of(states: Mapping[int, Mapping[str, Any]]) -> dict[int, bool]:
    """Registered broker -> fenced, from `broker_state`s by broker id (a broker whose
    fencing no record told is left out): what the controller's Fenced- and
    ActiveBrokerCount count (`kraft.gauges`)."""
    return {b: s["fenced"] for b, s in states.items()
            if s.get("registered", True) and "fenced" in s}


def fenced_brokers(rows: Iterable[Mapping[str, Any]]) -> dict[int, bool]:
    """`fenced_of` after `brokers` table rows in log order."""
    states: dict[int, dict[str, Any]] = {}
    for r in rows:
        states[r["broker_id"]] = broker_state(r, states.get(r["broker_id"], {}))
    return fenced_of(states)
