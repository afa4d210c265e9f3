"""What stands in the way of each benchmark target not met, as measured, and what was tried.

Issue 23 asks ``make bench`` to show every row with its target and anchor, "met or with the measurement
that stands in the way and what was tried". ``bench/report.py`` and ``bench/scale_report.py`` print, under
their tables, the note of each row whose target a run did not meet. Each note is a summary of the
measurements in ``bench/README.md`` (the round it names), on this project's 2-core machine.
"""

from __future__ import annotations

from collections.abc import Iterable

NOTES: tuple[tuple[str, str, str], ...] = (
    # (section, a piece of the row's metric, the note)
    ("2 websocket", "ws bytes / reply text bytes",
     "Stands in the way: a token costs ~11 bytes on the wire (one compressed frame each, which the lag target "
     "needs) against ~5.5 bytes of text, and each reply has ~1,150 bytes of fixed frames (the run's start, its "
     "status, the rows at its end): a 200-token reply is 3.1x its text, a 2,000-token one 2.1x (3,391 and "
     "23,514 bytes in round 15's run). Tried: permessage-deflate (round 3), text batched when the line is busy "
     "(round 4)."),
    ("3 browser", "interrupt (model tool call) -> card",
     "Stands in the way: on a quiet machine the server takes ~30 ms before the page has anything (the graph's "
     "interrupt and checkpoint writes, 13-19 ms after the model's tool call; the tab's per-person read of owner, "
     "'requested' write, drafts, rights and desk rows, 12-15 ms), and React then renders the card (22-31 ms); "
     "the graph's part and the render alone are 35-50 ms, before any read of the app's. "
     "Tried: one checkpoint read fewer, the grant read once per review, "
     "the review's rows read once per review ahead of the tabs, kept choices read beside the view, the previews "
     "in a second delta, the inbox re-read outside the tab's lock (rounds 8, 10, 11). Not tried: a card sent "
     "from the run itself before its checkpoint read-back, which would save the tab's read (12-15 ms) but "
     "not the graph's part or the render."),
    ("3 browser", "card with the desk / desk off",
     "Stands in the way: the desk's reads are already made once per review, concurrently, before the run says "
     "it ended (round 10); what is left is the review's 'requested' write and the desk rows, which on SQLite "
     "queue behind the run's own index writes (one writer): 80-340 ms under load in round 10's span profile. "
     "Tried: round 10's read-ahead (B/A 0.77 in one run, not confirmed in a second), round 11's second delta."),
    ("3 browser", "submit -> first resumed token",
     "Stands in the way: in process, with no Reflex and no page, 40-52 ms median (round 8 (c)): submit_review "
     "16 ms (owner, checkpoint, the claim's commit, the launch), then ~25 ms of graph (the resume's checkpoint "
     "read and writes, the tool, the demo model's first 10 ms of pacing); the page adds the click's event, "
     "the session check and Reflex's state lock. Tried: three reads fewer before the claim, two writes off the "
     "submitting handler, the inbox re-read outside the lock (rounds 8, 11)."),
    ("3 browser", "page/floor main-thread CPU",
     "Stands in the way: rendering the growing reply (layout and paint of the live text, ~0.7-0.9 ms a token "
     "in round 5b's trace) and Reflex's event path (socket.io decode, the delta's eval, 0.1-0.35 ms), against "
     "a floor page that appends a word with nothing around it. Tried: text in blocks with only the last lines "
     "live, one frame per token, scrolling in requestAnimationFrame, no layout read per mutation (rounds 4, 5b)."),
    ("3 browser", "main-thread ms / token",
     "Stands in the way: one websocket frame, one eval and one appendData per token, which the 5 ms lag target "
     "needs, plus the frame's layout and paint; the wall figure also counts waiting on a loaded machine (read "
     "the CPU row). Tried: as for the CPU row (rounds 4, 5b)."),
    ("5 concurrency", "lag ms",
     "Stands in the way: at 50 sessions x 20 tokens/s the backend needs ~1.5 CPU s per 1,000 tokens, ~1.5 of "
     "this machine's 2 cores beside the 50-session client, so the load of the moment decides the tail (stop "
     "16's runs: the same commit met and missed it). Tried: cheaper token events, the demo model keeping its "
     "pace (rounds 5a, 7, 9)."),
    ("6 long thread", "navigation -> interactive",
     "Stands in the way: the page's own load. With the browser's cache empty a Reflex page fetches ~40 files "
     "(domInteractive 290-420 ms here), React mounts, and only then does the websocket open and on_load run "
     "(hydrate -> data delta 97-128 ms); at 10,000 messages the server also reads the whole checkpoint "
     "(LangGraph deserializes the history, ~0.2 s, then the views, ~0.12 s). Opened again, with the build's "
     "files kept, the same page is interactive in 360-450 ms: the websocket and on_load, without the files. "
     "Tried: the route's modules preloaded, the build's "
     "files cached as immutable, the JSON editor loaded on demand, the first 50 rows only (rounds 13, 14)."),
    ("6 long thread", "scrolling to the top: long tasks",
     "Stands in the way: each step up resent every row the tab had seen, so steps grew to 10,000 rows; the "
     "tab now holds a window of at most 1,000 (ui/rows.py WINDOW_ROWS): 8-15 long tasks of up to 87-131 ms "
     "became 4-9 of up to 63-72 ms on a quiet machine (round 15). A 500-row window left 1 and 17 in two "
     "runs, so what remains is not the window's size; not broken down yet. Tried: growing steps (round 13), "
     "the bounded window (round 15)."),
    ("sessions", "backend CPU s / 1k tokens",
     "Stands in the way: a streamed token's backend CPU is framework work: a py-spy profile of the 3 workers "
     "at 50 sessions (docs/scale.md) gives Reflex's processing of the tabs' live-text events 16.5 %, socket "
     "writes 13.6 %, the tab watchers 11 %, Redis commands 9.5 %, Reflex's Redis state lock 7 %, PostgreSQL "
     "7 %; at 50 sessions x 20 tokens/s that is 2.1-2.4 CPU s per 1,000 tokens here. Tried: a cheaper "
     "live-text event, one pub/sub connection per worker (rounds 5a, 9, 12); coalescing a run's deltas while "
     "its worker's loop runs late (2.12 and 2.42, inside the noise: at 20 tokens/s only a gap well past 50 ms "
     "merges tokens, and that gap is the lag the 50-session target forbids), not kept."),
    ("sessions", "backend CPU / 1k tokens at",
     "Stands in the way: 500 tabs at 20 tokens/s are 10,000 tokens/s, about five times what 2 cores carry, "
     "so the 500-session row measures an overloaded machine (37-40 % of the tokens delivered), not the cost "
     "per token (docs/scale.md). Tried: as for the CPU row."),
)
"""``(section, metric piece, note)``: a row of ``section`` whose metric contains the piece gets the note."""


def notes_for(rows: Iterable[tuple[str, str]]) -> list[str]:
    """The notes (``"- metric: note"``) of the ``(section, metric)`` rows given, which are those whose
    target a run did not meet, each note once, in the rows' order; a row with no note says so."""
    out: list[str] = []
    seen: set[str] = set()
    for section, metric in rows:
        note = next((n for s, piece, n in NOTES if s == section and piece in metric), None)
        if note is None:
            out.append(f"- {section} / {metric}: no note yet (bench/not_met.py)")
        elif note not in seen:
            seen.add(note)
            out.append(f"- {section} / {metric}: {note}")
    return out


def render(rows: Iterable[tuple[str, str]]) -> str:
    """The block printed under a table: a title and ``notes_for(rows)``; "" when every target was met."""
    notes = notes_for(rows)
    if not notes:
        return ""
    return "\n".join(["", "Targets not met: what stands in the way (measured) and what was tried (bench/README.md):", *notes])
