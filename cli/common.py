"""Options and output helpers shared by the command modules."""

from __future__ import annotations

import json
import sys

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")

data_option = click.option(
    "--data",
    "data_path",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="A client's Data folder (MPQ chain) or a folder of loose extracted files.",
)


class PlacementChoice(click.Choice):
    """``coverage`` or ``client``; the old name ``seed`` is still accepted (with a note on stderr)."""

    def __init__(self):
        from wowgrass.placement import STRATEGIES

        super().__init__(list(STRATEGIES))

    def convert(self, value, param, ctx):
        from wowgrass.placement import STRATEGY_ALIASES

        if value in STRATEGY_ALIASES:
            new = STRATEGY_ALIASES[value]
            click.echo(f"note: --placement {value} is now called --placement {new}", err=True)
            return new
        return super().convert(value, param, ctx)


placement_option = click.option(
    "--placement",
    type=PlacementChoice(),
    default="coverage",
    show_default=True,
    help="Grass placement strategy: coverage = per-cell MCAL coverage and clumps (the grass reference's "
    "formula); client = what the 1.12/2.4.3/3.3.5 clients do.",
)


def echo_json(obj) -> None:
    """Write ``obj`` as indented JSON to stdout (numpy scalars and arrays converted)."""
    import numpy as np

    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, (bytes, bytearray)):
            return o.hex()
        if hasattr(o, "__fspath__"):
            return str(o)
        raise TypeError(f"not JSON serializable: {type(o).__name__}")

    json.dump(obj, sys.stdout, indent=2, default=default)
    sys.stdout.write("\n")
