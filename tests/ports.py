"""Loopback ports for the servers the tests start (Kafka's nodes, a Spark standalone
cluster, the S3 server), chosen before the server binds them."""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range. A port bind(0) hands
    out is in that range, where every outgoing connection of any process takes its local
    port too, so one could take it before the server bound it (a Kafka controller's JMX port,
    "Address already in use", while the other worker started its Spark session: 2026-11-27).
    Below the range only a server binding that very port can; each worker draws its own
    (`SystemRandom`: a test seeding `random` cannot make two workers draw alike)."""
    lowest_ephemeral = int(_RANGE.read_text().split()[0]) if _RANGE.exists() else 32768
    draw = random.SystemRandom()
    while lowest_ephemeral > _LOWEST:
        port = draw.randrange(_LOWEST, lowest_ephemeral)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # no room below the range: what bind(0) gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
