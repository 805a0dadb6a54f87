"""The ``wowgrass`` command line (installed as ``wowgrass.cli``). Commands stay thin: logic lives in wowgrass/."""
