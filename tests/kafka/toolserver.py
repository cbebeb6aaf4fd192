"""Kafka's command-line tools run in one long-lived JVM per Kafka version (ToolServer.java).

Each tool as its own process costs a JVM start, 0.8-1.3 s of wall and about as much CPU on an
idle machine; the Kafka scenario asks Kafka about 150 times (describes, the quorum's high
watermark, the controller's gauges), so those starts were 170 of its 280 s on an idle
machine. The server runs the same tool classes, with the same arguments, through their
`main` methods, and returns what they printed and the status they exited with.

A request that outlives its timeout kills the server (whatever the tool was waiting for is
stuck in it) and raises `subprocess.TimeoutExpired`, as `subprocess.run` would; the next
request starts a new server.
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

SOURCE = Path(__file__).resolve().parent / "ToolServer.java"


class ToolServer:
    """The server of one Kafka version: `run(main, *args)` is a tool's whole run."""

    def __init__(self, command: Callable[[], list[str]], log: Path) -> None:
        # `command()`: the command line running ToolServer.java, built only when a server
        # starts (resolving the version's class path reads and checks a hundred jars)
        self.command, self.log = command, log
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.reader: BinaryIO | None = None
        self.lock = threading.Lock()

    def _start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=log)
        assert self.proc.stdout is not None
        port = self.proc.stdout.readline().strip()
        if not port.isdigit():
            self.stop()
            raise RuntimeError(f"the Kafka tool server did not start; its log: {self.log}")
        self.sock = socket.create_connection(("127.0.0.1", int(port)))
        self.reader = self.sock.makefile("rb")

    def stop(self) -> None:
        if self.reader is not None:  # it holds the socket open until closed itself
            self.reader.close()
            self.reader = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, main: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
        """`main` run with `args`: its exit status and what it printed, as text."""
        assert all("\0" not in a and "\n" not in a for a in (main, *args)), args
        with self.lock:
            if self.sock is None:
                self._start()
            assert self.sock is not None and self.reader is not None
            self.sock.settimeout(timeout)
            try:
                self.sock.sendall("\0".join((main, *args)).encode() + b"\n")
                header = self.reader.readline().split()
                if len(header) != 3:
                    raise RuntimeError(f"the Kafka tool server ended during {main}; "
                                       f"its log: {self.log}")
                status, out_len, err_len = map(int, header)
                out, err = self.reader.read(out_len), self.reader.read(err_len)
            except TimeoutError:
                self.stop()
                raise subprocess.TimeoutExpired([main, *args], timeout) from None
            except BaseException:
                self.stop()
                raise
        return subprocess.CompletedProcess([main, *args], status,
                                           out.decode(errors="replace"),
                                           err.decode(errors="replace"))


_servers: dict[str, ToolServer] = {}


def server(version: str, command: Callable[[], list[str]], log: Path) -> ToolServer:
    """The one server of Kafka `version` in this process (stopped when it exits)."""
    if version not in _servers:
        _servers[version] = ToolServer(command, log)
        atexit.register(_servers[version].stop)
    return _servers[version]
