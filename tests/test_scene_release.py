"""Closing the view while tiles stream (issue 25): Scene.release stops and joins the worker, so no
load runs after the data source closes (it printed 'ValueError: mmap closed or invalid')."""

from __future__ import annotations

import logging
import threading
import time

import pytest

pytestmark = pytest.mark.gl

from wowgrass.render.world.synthetic import SyntheticSource, tile_origin  # noqa: E402

TILES = [(32, 32), (33, 32), (32, 33), (33, 33)]


class ClosingSource(SyntheticSource):
    """Loads take a while and read a data source the caller closes after the scene, as run_view
    does; a read after that fails as a closed GameData's mmap does."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.started = threading.Event()
        self.closed = False
        self.loads_after_close = 0

    def load_tile(self, col, row):
        self.started.set()
        time.sleep(0.3)
        if self.closed:
            self.loads_after_close += 1
            raise ValueError("mmap closed or invalid")
        return super().load_tile(col, row)


def test_release_joins_the_worker_before_the_data_closes(ctx, caplog):
    from wowgrass.render.gl.programs import make_programs
    from wowgrass.render.world.streaming import Scene

    src = ClosingSource(tiles=TILES, density=0.002)
    scene = Scene(ctx, make_programs(ctx), src, threaded=True, reach=1e6)
    x, y = tile_origin(32, 32)
    scene.update((x, y, 0.0))                 # four tiles asked for; none waited for
    assert src.started.wait(10)
    caplog.set_level(logging.WARNING, logger="wowgrass")
    worker = scene._worker
    scene.release()                           # a load is under way: release waits for it
    src.closed = True                         # then the data source closes
    time.sleep(1.0)                           # what a worker still running would now read
    assert src.loads_after_close == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    assert not worker.is_alive()

