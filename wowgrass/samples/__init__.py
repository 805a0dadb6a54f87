"""The built-in sample world: a small procedural zone written with wowgrass's own writers.

Real client data cannot ship with wowgrass, so it makes its own: a map ``WowgrassSample`` of a
few ADT tiles around the middle of the 64×64 grid, with fBm terrain, grass/dirt/rock/road layers,
ground-effect tables, ``ElwGra*`` grass clumps and a human-sized reference figure, in the MPQ
archives of a 1.12, 2.4.3 or 3.3.5 client.  ``wowgrass view``/``bake`` use it when no ``--data``
is given.  See docs/sample.md.
"""

from wowgrass.samples.sample_world import (
    BUILDS, MAP_NAME, SAMPLE_VERSION, adt_path, archive_layout, build_sample_world, parse_tiles,
    sample_data_path, sample_root, wdl_path, wdt_path, world_files, write_sample_world,
)

__all__ = ["BUILDS", "MAP_NAME", "SAMPLE_VERSION", "adt_path", "archive_layout", "build_sample_world",
           "parse_tiles", "sample_data_path", "sample_root", "wdl_path", "wdt_path", "world_files", "write_sample_world"]
