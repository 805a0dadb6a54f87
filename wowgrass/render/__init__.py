"""Rendering (moderngl). The only package that imports moderngl; nothing upstream imports it."""
