"""The suite's polling helper says what it waited for and fails when it will not come."""

from __future__ import annotations

import pytest

from tests.polling import WaitFailed, wait_until


def test_returns_once_the_condition_holds() -> None:
    answers = iter([False, False, True])
    wait_until("the third answer", lambda: next(answers), 5, interval=0.01)


def test_times_out_saying_what_and_after_how_long() -> None:
    with pytest.raises(WaitFailed, match=r"^timed out after 0\.05 s: the impossible\nlog tail$"):
        wait_until("the impossible", lambda: False, 0.05, interval=0.01,
                   detail=lambda: "log tail")


def test_a_wait_that_can_no_longer_succeed_ends_at_once_with_the_reason() -> None:
    asked: list[int] = []
    with pytest.raises(WaitFailed, match=r"^the stream's end: the stream stopped$"):
        wait_until("the stream's end", lambda: asked.append(1) or False, 60, interval=0.01,
                   failed=lambda: "the stream stopped" if asked else None)
    assert asked == [1]
