"""The grass stage: placement strategies (coverage and the clients' own scatter), the camera-grid
data, instance bundles and the bake that caches them. Built on ``wowgrass.game``."""
