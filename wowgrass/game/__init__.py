"""What the client's data means: data sources (an MPQ chain or a loose folder), maps and their
tiles, the ground-effect catalogue, map objects and liquid types. Built on ``wowgrass.formats``;
knows nothing of grass placement or rendering."""
