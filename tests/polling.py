"""The suite's one way to wait for something a process or a stream does in its own time.

`wait_until` asks a condition again and again until it holds; when it will not, the test
fails there, saying what did not happen and after how long, instead of running on into an
assertion about a state that never came.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class WaitFailed(AssertionError):
    """What `wait_until` waited for did not happen: timed out, or can no longer happen."""


def wait_until(what: str, predicate: Callable[[], bool], timeout: float, *,
               interval: float = 1.0, failed: Callable[[], str | None] | None = None,
               detail: Callable[[], str] | None = None) -> None:
    """Ask `predicate` every `interval` s until it holds, for at most `timeout` s.

    Raises `WaitFailed("timed out after N s: <what>")` when the time is up. `failed`, asked
    before each try, names why the wait can no longer succeed (the process exited, the
    stream stopped); a name ends the wait at once with "<what>: <why>". `detail` adds what
    helps to see why (a log's tail) to either message, read only when the wait fails.
    """
    deadline = time.monotonic() + timeout
    while True:
        why = failed() if failed is not None else None
        if why:
            message = f"{what}: {why}"
            break
        if predicate():
            return
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout:g} s: {what}"
            break
        time.sleep(interval)
    if detail is not None:
        message += "\n" + detail()
    raise WaitFailed(message)
