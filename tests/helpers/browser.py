"""Debian's headless Chromium for browser tests (``chromium`` and ``chromium-driver``, never a downloaded build):
:func:`headless_chromium` yields a Selenium driver and always quits it.  Without the browser the test is
skipped with the reason, except under ``CI=true``, where a missing browser is an error (``make browser``
installs it as root)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest

from tests.helpers.databases import IN_CI

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
#: Where browser tests save their screenshots (a build artifact: git-ignored).
SCREENSHOTS: Final = Path(__file__).resolve().parents[2] / "build" / "screenshots"
T = TypeVar("T")


@contextmanager
def headless_chromium(*, window: tuple[int, int] | None = None) -> Iterator[Any]:
    """The driver; ``window``: its size in CSS pixels (width, height), else Chromium's default."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        reason = "chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)"
        if IN_CI:
            pytest.fail(f"{reason}; under CI=true the browser test must run")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    arguments = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
    if window is not None:
        arguments.append(f"--window-size={window[0]},{window[1]}")
    for argument in arguments:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(condition: Callable[[], T], what: str, timeout: float = 15) -> T:
    """``condition()``'s first truthy answer, polled every 0.1 s; fails naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def screenshot(driver: Any, name: str) -> Path:
    """Save the page as ``build/screenshots/<name>.png``; returns the path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
