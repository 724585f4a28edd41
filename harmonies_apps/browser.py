"""A real browser against a real server: a headless Chromium driven by Selenium and a play server in a thread.

The one set-up shared by the browser tests (tests/test_browser.py) and the docs' screenshot script
(docs/img/make_screenshots.py), so both see the pages with the same options and scale. Needs the `web` extra
(selenium, starlette, uvicorn) and Debian's `chromium` + `chromium-driver` packages (see docs/web.md).
"""
from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from typing import Any, Iterator

__all__ = ["chromium_paths", "headless_chromium", "serve_in_thread"]

#: Chromium options: no window, no sandbox (containers), no GPU, /tmp instead of a small /dev/shm, and 1 CSS pixel
#: = 1 screenshot pixel.
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--force-device-scale-factor=1")


def chromium_paths() -> tuple[str, str] | None:
    """(browser, chromedriver) executables found on PATH, or None when either is missing."""
    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def headless_chromium(width: int = 1400, height: int = 1250) -> Any:
    """A new headless Chromium `selenium.webdriver.Chrome` with a `width` x `height` window (quit it when done).

    Raises ModuleNotFoundError without selenium, RuntimeError (naming the packages) without Chromium.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = chromium_paths()
    if paths is None:
        raise RuntimeError("Chromium or chromedriver not found on PATH: apt-get install -y chromium chromium-driver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = paths[0]
    for a in (*CHROMIUM_ARGS, f"--window-size={width},{height}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(paths[1]), options=opts)


@contextlib.contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", timeout: float = 20.0, proxy: Any = ()) -> Iterator[str]:
    """Serve the play server's `app` (`serve.create_app(...)`) with uvicorn in a daemon thread on a free port of `host`,
    configured as `harmonies serve` is (`serve.serve_config`: its limits, timeouts and Host / Origin checks).

    Yields the base URL ("http://127.0.0.1:PORT") once the server accepts connections, and stops it on exit.
    """
    import uvicorn

    from .serve import serve_config

    with socket.socket() as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(serve_config(app, host, port, proxy=proxy))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    end = time.monotonic() + timeout
    while not srv.started:
        if not th.is_alive() or time.monotonic() > end:
            srv.should_exit = True
            raise RuntimeError(f"the server on {host}:{port} did not start within {timeout:g} s")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        srv.should_exit = True
        th.join(10)
