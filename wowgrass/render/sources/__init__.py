"""Sources: what a frame draws (terrain, doodads, grass of each kind).

A source owns its GPU buffers and offers two calls (subclass :class:`Source`)::

    class MySource(Source):
        name = "mine"                                  # key of its counts in Frame.counts
        def prepare(self, frame):                      # once a frame, before any pass draws:
            ...                                        #   culling / LOD per view in frame.views
        def draw(self, pass_, view) -> DrawCounts:     # once per pass and view
            prog = pass_.program(self.programs, "mine")  # the pass's variant of mine.glsl
            ...
            return DrawCounts(draw_calls=1, instances=n, triangles=t)

``pass_.program`` compiles the source's ``.glsl`` with the pass's ``#define``s (a shadow pass asks
for depth-only variants of the same files; grass keeps ``sway.glsl`` either way). A source that
has nothing for a pass (terrain in a grass-only debug pass, say) returns ``DrawCounts()``.
Frame-wide uniforms (matrices, time, wind, fog) come from the ``Frame`` uniform block
(``shaders/frame.glsl``); a source sets only its own per-draw uniforms.

(Not to be confused with :mod:`wowgrass.render.world.game_tiles`, the *tile data* source a scene streams from.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class DrawCounts:
    draw_calls: int = 0
    instances: int = 0
    triangles: int = 0

    def __add__(self, other: DrawCounts) -> DrawCounts:
        return DrawCounts(self.draw_calls + other.draw_calls, self.instances + other.instances,
                          self.triangles + other.triangles)


class Source:
    name = "source"
    enabled = True  # a disabled source is skipped by the viewer (the G/O/T toggles)

    def prepare(self, frame) -> None:
        """Per-frame work before any pass draws (culling for each of ``frame.views``)."""

    def draw(self, pass_, view) -> DrawCounts:
        raise NotImplementedError

    def warm_programs(self, pass_, view) -> list:
        """The programs (and a pipeline state, see :data:`WARM_STATES`) this source can draw
        ``pass_`` and ``view`` with, as ``[(program, state)]``, compiled by asking: the viewer's
        warm-up (Viewer.warm_up) draws each once before the first frame, whether or not the
        source has anything to draw yet."""
        return []


# the pipeline states a warm-up draw is made under (what the source's own draw enables)
WARM_STATES = ("opaque", "blend", "coverage")
