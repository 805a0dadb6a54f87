"""Which input the panels take: Dear ImGui says it (``want_capture_mouse`` / ``want_capture_keyboard``),
but only in the frame that processed the event. A click arrives with the cursor's move in the same
poll of events, before any frame of panels has seen either; the flags then still describe the
last frame (the cursor over the terrain, no field active), and a click on a panel's text painted
the terrain behind it; keys typed right after a click into a field reached the view's keys. And
imgui does not take every queued event in the next frame: it trickles them (one change of a key
or a button a frame), so on a slow frame rate a click may be processed frames after it came.

So every button, key and wheel event is handed to imgui at once and held here with the id imgui
gave its last input event; after each ``new_frame`` the panels report up to which id imgui has
processed and what it wants now; each held event then gets the flags of the frame that processed
it, and goes, in the order the events came, to imgui alone or to the tools and the camera.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass
class HeldEvent:
    kind: str  # "button", "key" or "scroll"
    args: tuple  # the callback's arguments
    event_id: int  # imgui's id of the (last) input event it made: processed once imgui passed it
    cursor: tuple = (0.0, 0.0)  # where the cursor was (a click acts there)
    flags: tuple | None = None  # (want mouse, want keyboard) of the frame that processed it


class InputGate:
    """Events held until imgui has processed them (see the module docstring)."""

    def __init__(self):
        self.held: deque[HeldEvent] = deque()

    def hold(self, kind: str, args: tuple, event_id: int, cursor=(0.0, 0.0)) -> None:
        self.held.append(HeldEvent(kind, tuple(args), int(event_id), tuple(cursor)))

    def record(self, processed_id: int, want_mouse: bool, want_keyboard: bool) -> None:
        """After a ``new_frame``: imgui has processed its input events up to ``processed_id``, and
        wants the mouse / keyboard (its flags for this frame's state)."""
        for ev in self.held:
            if ev.flags is None and ev.event_id <= processed_id:
                ev.flags = (bool(want_mouse), bool(want_keyboard))

    def ready(self):
        """The held events imgui has processed, in order, each with whether imgui took it:
        ``(event, taken)`` (a later event waits for every earlier one)."""
        out = []
        while self.held and self.held[0].flags is not None:
            ev = self.held.popleft()
            mouse, keyboard = ev.flags
            out.append((ev, keyboard if ev.kind == "key" else mouse))
        return out

    def clear(self) -> None:
        self.held.clear()
