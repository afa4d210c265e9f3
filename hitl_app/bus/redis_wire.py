"""The Redis run bus's wire: its Lua scripts (state update + PUBLISH in one atomic step, opening
and releasing a run's keys) and the ``<seq>|<json RunEvent>`` messages on a thread's channel.

The keys they touch are listed in ``hitl_app.bus.redis_bus``.
"""

# Tested by: tests/integration/bus/test_redis_bus.py, tests/integration/bus/test_bus_contract.py

from __future__ import annotations

import asyncio
import dataclasses
import json

from hitl_app.bus.redis_fanout import RESYNC
from hitl_app.bus.run_bus import RunEvent

PUBLISH_SCRIPT = """
local kind = ARGV[2]
local seq = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[4])
if kind == 'text' then
  redis.call('APPEND', KEYS[1], ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
elseif kind == 'boundary' or kind == 'started' then
  redis.call('SET', KEYS[1], '', 'EX', ARGV[4])
elseif kind == 'ended' then
  redis.call('DEL', KEYS[1])
  if redis.call('GET', KEYS[3]) == ARGV[6] then redis.call('DEL', KEYS[3]) end
end
redis.call('PUBLISH', ARGV[1], seq .. '|' .. ARGV[5])
return seq
"""

OPEN_SCRIPT = """
local g = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], g, 'EX', ARGV[1])
return g
"""

RELEASE_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def encode(event: RunEvent) -> str:
    """JSON for pub/sub. ``view`` (the process-local ThreadView of an ended run) is left out: a
    subscriber on another worker reloads the thread from the shared checkpoint instead."""
    return json.dumps(dataclasses.asdict(dataclasses.replace(event, view=None)))


def decode(message: str) -> tuple[int, RunEvent]:
    """``<seq>|<json>`` -> (seq, event)."""
    number, _, data = message.partition("|")
    return int(number), RunEvent(**json.loads(data))


def take_queued(queue: asyncio.Queue[str]) -> list[str]:
    """The messages already in ``queue`` (without waiting)."""
    messages = []
    while not queue.empty():
        messages.append(queue.get_nowait())
    return messages


def newer_than(seen: int, messages: list[str]) -> list[RunEvent]:
    """Events of ``messages`` after sequence number ``seen``, up to and including ``ended``."""
    events = []
    for message in messages:
        if message == RESYNC:
            continue
        number, event = decode(message)
        if number > seen:
            events.append(event)
            if event.kind == "ended":
                break
    return events
