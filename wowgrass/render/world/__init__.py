"""Where the sources' data comes from: tiles from game data (game_tiles) or made up (synthetic),
their streaming around the camera (streaming), and where the view starts (firstframe)."""
