"""Which engines this machine can run, and with which browser.

The contract: :func:`available_engines` takes the crawl's
:class:`~scrapy_focus.config.BrowserConfig` and the engines asked for
(``FOCUS_ENGINES``, empty: every known one) and answers, in ladder order, an
:class:`EngineInfo` for each engine that can run here: ``http`` always, ``chromium``
when scrapy-playwright and a Chromium are installed (``FOCUS_CHROMIUM_EXECUTABLE``,
Playwright's own build, or one on PATH), ``stealth`` when Camoufox's browser is
installed, else a Firefox (``FOCUS_FIREFOX_EXECUTABLE`` or on PATH, over WebDriver
BiDi).  It never downloads anything, never starts a browser, and says why an engine
is skipped.  Each browser engine's :attr:`EngineInfo.settings` are our
``PLAYWRIGHT_*`` settings for its scrapy-playwright handler, before the user's are
merged in (:mod:`scrapy_focus.engines.browser_settings`).

Chromium keeps its sandbox unless it cannot have one (:func:`sandbox_unavailable`)
or ``FOCUS_CHROMIUM_SANDBOX`` is off; Camoufox pins Playwright versions, checked
here (:func:`check_camoufox_playwright`) so that a mismatch fails at start-up.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy_focus.config import BrowserConfig

logger = logging.getLogger(__name__)

KNOWN_ENGINES = ("http", "chromium", "stealth")
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
CAMOUFOX_PROVIDER = "scrapy_focus.engines.browser_settings.CamoufoxBrowserProvider"
BROWSER_HEADERS = "scrapy_focus.engines.headers.browser_headers"
ABORT_REQUEST = "scrapy_focus.engines.browser_settings.should_abort_request"


class EngineError(RuntimeError):
    """An engine cannot run; the message says which and what to change."""


@dataclass(frozen=True)
class EngineInfo:
    engine: str
    browser: str  # "scrapy-http", "chromium", "camoufox", "firefox-esr", ...
    settings: dict[str, Any]  # PLAYWRIGHT_* settings of its handler instance
    warning: str | None = None  # said once when the crawl's engines are set up


#: Where the kernel says whether unprivileged user namespaces (Chromium's
#: sandbox on Linux without a setuid helper) can be created, and the value
#: that says no.
_USERNS_SWITCHES = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ("/proc/sys/user/max_user_namespaces", "0"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
)


def sandbox_unavailable(uid: int | None = None, switches: Any = _USERNS_SWITCHES) -> str | None:
    """Why Chromium's sandbox cannot run on this machine, or None if it can.

    Chromium refuses its sandbox as root (it exits: "Running as root without
    --no-sandbox is not supported"), and its namespace sandbox needs
    unprivileged user namespaces."""
    if uid is None:
        uid = os.geteuid() if hasattr(os, "geteuid") else -1
    if uid == 0:
        return "the crawl runs as root, where Chromium refuses its sandbox"
    for path, off in switches:
        with contextlib.suppress(OSError), open(path) as file:
            if file.read().strip() == off:
                return f"unprivileged user namespaces are disabled ({path} = {off})"
    return None


def chromium_args(browser: BrowserConfig, uid: int | None = None) -> tuple[list[str], str | None]:
    """Chromium's command line for user *uid* (this process's by default), and
    the warning to give when it runs unsandboxed."""
    if not browser.chromium_sandbox:
        return ["--no-sandbox", *CHROMIUM_ARGS], None  # the user's choice, documented
    reason = sandbox_unavailable(uid)
    if reason is None:
        return list(CHROMIUM_ARGS), None
    return ["--no-sandbox", *CHROMIUM_ARGS], (
        f"Chromium runs without its sandbox: {reason}. A page that exploits the "
        "renderer then runs with this user's rights; run the crawl as an "
        "unprivileged user (see docs/engines.md)"
    )


def _playwright_installed() -> bool:
    return importlib.util.find_spec("scrapy_playwright") is not None


def _playwright_browser(name: str) -> bool:
    """Whether ``playwright install`` put a build of *name* on this machine."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser(
        "~/.cache/ms-playwright"
    )
    return os.path.isdir(root) and any(entry.startswith(f"{name}-") for entry in os.listdir(root))


def _system_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return os.path.realpath(path) if name.startswith("google") else path
    return None


def camoufox_browser() -> str | None:
    """Path of an installed Camoufox browser, or None (never downloads)."""
    if importlib.util.find_spec("camoufox") is None or not _camoufox_fetched():
        return None
    try:
        from camoufox.multiversion import get_active_path

        active = get_active_path()
    except Exception:
        return None
    return str(active) if active else None


def _camoufox_fetched() -> bool:
    """Whether ``camoufox fetch`` left anything where camoufox keeps its browsers
    (``camoufox.pkgman.INSTALL_DIR``, the user cache directory): when nothing is
    there, no browser is installed, and importing camoufox to be told so costs
    half a second of every crawl's start-up."""
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # camoufox depends on it: let camoufox itself answer
        return True
    return os.path.isdir(user_cache_dir("camoufox"))


def check_camoufox_playwright() -> None:
    """Camoufox pins Playwright versions: refuse a mismatch at start-up, clearly."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    installed = Version(importlib.metadata.version("playwright"))
    for line in importlib.metadata.requires("camoufox") or []:
        requirement = Requirement(line)
        if (
            requirement.name == "playwright"
            and not requirement.marker
            and installed not in requirement.specifier
        ):
            raise EngineError(
                f"camoufox {importlib.metadata.version('camoufox')} needs "
                f"playwright{requirement.specifier}, but playwright {installed} is "
                "installed: pip install 'playwright" + str(requirement.specifier) + "' "
                "or set FOCUS_STEALTH_BROWSER = 'firefox'"
            )


def available_engines(browser: BrowserConfig, engines: Sequence[str] = ()) -> dict[str, EngineInfo]:
    """The engines this machine can run, in ladder order: *engines* (every known
    one when empty) less those it cannot run."""
    found: dict[str, EngineInfo] = {}
    common = _common_settings(browser)
    for engine in engines or KNOWN_ENGINES:
        if engine not in KNOWN_ENGINES:
            logger.warning(
                "FOCUS_ENGINES names an unknown engine %r (known: %s): skipped",
                engine,
                ", ".join(KNOWN_ENGINES),
            )
            continue
        if engine == "http":
            info: EngineInfo | None = EngineInfo("http", "scrapy-http", {})
        elif not _playwright_installed():
            continue
        elif engine == "chromium":
            info = _chromium_engine(browser, common)
        else:
            info = _stealth_engine(browser, common)
        if info is not None:
            found[engine] = info
    return found


def engines_or_not_configured(engines: dict[str, EngineInfo]) -> dict[str, EngineInfo]:
    """*engines*, or NotConfigured when a ladder cannot climb them (fewer than two)."""
    if len(engines) < 2:
        raise NotConfigured(
            f"the engine ladder needs at least two engines; available: "
            f"{', '.join(engines) or 'none'} (see FOCUS_ENGINES and the browser settings)"
        )
    return engines


def _common_settings(browser: BrowserConfig) -> dict[str, Any]:
    """Our PLAYWRIGHT_* settings shared by every browser engine."""
    common: dict[str, Any] = {
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": browser.max_pages,
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": browser.navigation_timeout * 1000,
        "PLAYWRIGHT_PROCESS_REQUEST_HEADERS": BROWSER_HEADERS,
    }
    if browser.block_resources:
        common["PLAYWRIGHT_ABORT_REQUEST"] = ABORT_REQUEST
    return common


def _chromium_engine(browser: BrowserConfig, common: dict[str, Any]) -> EngineInfo | None:
    executable = browser.chromium_executable
    if executable and not os.path.exists(executable):
        logger.warning(
            "FOCUS_CHROMIUM_EXECUTABLE=%s does not exist: chromium engine disabled", executable
        )
        return None
    if executable is None and not _playwright_browser("chromium"):
        executable = _system_chromium()
        if executable is None:
            logger.info(
                "No Chromium found (Playwright's own, or FOCUS_CHROMIUM_EXECUTABLE, "
                "or chromium on PATH): chromium engine skipped"
            )
            return None
    args, warning = chromium_args(browser)
    launch: dict[str, Any] = {"headless": True, "args": args}
    if executable:
        launch["executable_path"] = executable
    settings = {
        **common,
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch,
    }
    return EngineInfo("chromium", "chromium", settings, warning)


def _stealth_engine(browser: BrowserConfig, common: dict[str, Any]) -> EngineInfo | None:
    choice = browser.stealth_browser
    if choice in ("auto", "camoufox") and camoufox_browser():
        check_camoufox_playwright()
        return EngineInfo(
            "stealth",
            "camoufox",
            {
                **common,
                "PLAYWRIGHT_BROWSER_TYPE": "firefox",
                "PLAYWRIGHT_BROWSER_PROVIDER": CAMOUFOX_PROVIDER,
                "PLAYWRIGHT_LAUNCH_OPTIONS": {"headless": True},
            },
        )
    if choice == "camoufox":
        raise EngineError(
            "FOCUS_STEALTH_BROWSER='camoufox' but no Camoufox browser is "
            "installed (run `camoufox fetch` on a machine with internet)"
        )
    configured = browser.firefox_executable
    if configured and not os.path.exists(configured):
        logger.warning(
            "FOCUS_FIREFOX_EXECUTABLE=%s does not exist: stealth engine disabled", configured
        )
        return None
    executable = configured or shutil.which("firefox-esr") or shutil.which("firefox")
    if not executable:
        logger.info(
            "No Camoufox browser and no Firefox on PATH (set FOCUS_FIREFOX_EXECUTABLE): "
            "stealth engine skipped"
        )
        return None
    launch = {"headless": True, "executable_path": executable}
    if browser.firefox_bidi:
        launch["channel"] = "moz-firefox"  # a stock Firefox speaks WebDriver BiDi, not Juggler
    return EngineInfo(
        "stealth",
        os.path.basename(executable),
        {**common, "PLAYWRIGHT_BROWSER_TYPE": "firefox", "PLAYWRIGHT_LAUNCH_OPTIONS": launch},
    )
