"""Shared fixtures: the real-data folder, a private cache folder, the fixtures folder, an EGL context."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def realdata() -> Path:
    """``$WOWGRASS_REALDATA`` (real client files); tests using it skip when it is absent."""
    root = os.environ.get("WOWGRASS_REALDATA")
    if not root:
        pytest.skip("WOWGRASS_REALDATA is not set (real client files are not available)")
    path = Path(root)
    if not path.is_dir():
        pytest.skip(f"WOWGRASS_REALDATA={root} is not a folder")
    return path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Keep every test's cache (sample world, bundles) out of the user's real cache folder."""
    if "WOWGRASS_TEST_CACHE" not in os.environ:
        os.environ["WOWGRASS_TEST_CACHE"] = str(tmp_path_factory.getbasetemp() / "cache")
    monkeypatch.setenv("WOWGRASS_CACHE", os.environ["WOWGRASS_TEST_CACHE"])


@pytest.fixture(scope="module")
def egl():
    """Skips the module where no EGL context can be made (tests that render through the CLI,
    which makes its own)."""
    from wowgrass.render.gl.context import GLUnavailableError, create_offscreen_context, release_context

    try:
        release_context(create_offscreen_context())
    except GLUnavailableError as exc:
        pytest.skip(f"no EGL OpenGL context: {exc}")


@pytest.fixture(scope="module")
def ctx():
    """An offscreen OpenGL context per test module (EGL; the module skips without one)."""
    from wowgrass.render.gl.context import GLUnavailableError, create_offscreen_context, release_context

    try:
        c = create_offscreen_context()
    except GLUnavailableError as exc:
        pytest.skip(f"no EGL OpenGL context: {exc}")
    yield c
    release_context(c)


@pytest.fixture(autouse=True)
def _ctx_current(request):
    """The module's context made current for each test that uses it. A test that creates and
    releases a context of its own (the CLI run in-process) used to leave no usable context
    current; ``release_context`` now makes the newest live one current again, and this keeps a
    test from depending on which that is."""
    if "ctx" not in request.fixturenames:
        yield
        return
    with request.getfixturevalue("ctx"):
        yield

