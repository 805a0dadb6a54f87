"""Shared fixtures: the real-data folder, a private cache folder, the fixtures folder, an EGL context;
:func:`require_tool` for the tools CI installs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as CI systems and .ci/run set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


_ON_PATH = object()


def require_tool(name: str, why: str, found=_ON_PATH):
    """``found`` (by default ``name`` looked up on PATH), or the test stops: skipped here, FAILED under
    ``CI=true``, where .ci/run installs every tool a test needs (Xvfb, xdotool, node and the glTF
    validator, libstorm9, chromium, EGL), so a missing one is an install step that failed, not a test
    to leave out. ``found``: what the caller found (a path, a loaded library, True) or a falsy value."""
    if found is _ON_PATH:
        found = shutil.which(name)
    if found:
        return found
    message = f"{name} is not available: {why}"
    if in_ci():
        pytest.fail(f"CI=true and {message} (.ci/run installs it: did an install step fail?)", pytrace=False)
    pytest.skip(message)


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
        require_tool("an EGL OpenGL context", str(exc), found=False)


@pytest.fixture(scope="module")
def ctx():
    """An offscreen OpenGL context per test module (EGL; the module skips without one)."""
    from wowgrass.render.gl.context import GLUnavailableError, create_offscreen_context, release_context

    try:
        c = create_offscreen_context()
    except GLUnavailableError as exc:
        require_tool("an EGL OpenGL context", str(exc), found=False)
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

