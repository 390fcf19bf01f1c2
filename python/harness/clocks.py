"""The clock helpers of the tests of windowed filters: when a request went and came back, and when
a filter's parts expire, on the clock the server reads (the machine's)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

# Both clocks count whole milliseconds (the server's, and the expiries it reports): a millisecond of
# room each way.
MS = 0.001

T = TypeVar("T")


def timed(request: Callable[[], T]) -> tuple[T, float, float]:
    """What ``request()`` gives, with the clock read just before it went and just after its reply
    came back (seconds since the epoch): the server read its own clock, the same one, in between,
    however long a busy machine kept either side waiting."""
    sent = time.time()
    reply = request()
    return reply, sent, time.time()


def expiries(client: Any, key: str) -> list[float]:
    """When the live parts of the windowed filter at ``key`` expire (seconds since the epoch, from
    the milliseconds BF.DEBUG gives), soonest first."""
    lines = client.execute_command("BF.DEBUG", key)
    text = [line.decode() if isinstance(line, bytes) else line for line in lines]
    return sorted(
        int(line.split("until:", 1)[1].split()[0]) / 1000 for line in text if "until:" in line
    )
