"""The package's structure holds: the counts docs/architecture.md promises.

Read from the source with ``ast``: module and function sizes, settings read in
one module, no module-level registries, and the request meta keys scrapy-focus
writes (``focus`` plus the ones Scrapy and scrapy-playwright define).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "scrapy_focus"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
#: Where settings are read (the add-on writes them; settings.py holds the defaults).
SETTINGS_READER = PACKAGE / "config" / "__init__.py"
#: Meta keys scrapy-focus may write besides its own ``focus``: Scrapy's and
#: scrapy-playwright's, which those components read.
FOREIGN_META_KEYS = {
    "dont_cache",
    "dont_filter",
    "dont_redirect",
    "handle_httpstatus_all",
    "playwright",
    "playwright_context",
    "playwright_context_kwargs",
    "playwright_include_page",
    "playwright_page",
    "playwright_page_init_callback",
    "playwright_page_methods",
    "download_slot",
    "depth",
    "cache_timestamp",  # what Scrapy's cache storages set on a hit
}
#: Input keys a spider may set (docs/engines.md); our commands set them as a spider would.
USER_META_KEYS = {"focus_engine"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_module_size(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_function_size(path: Path) -> None:
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_name(path)}: {', '.join(long)}"


def _reads_focus_setting(node: ast.AST) -> bool:
    """``x.get*("FOCUS_...")`` or ``x["FOCUS_..."]`` in a load context."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        first = node.args[0] if node.args else None
        return (
            node.func.attr.startswith("get")
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and first.value.startswith("FOCUS_")
        )
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        key = node.slice
        return (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and key.value.startswith("FOCUS_")
        )
    return False


def test_settings_are_read_in_one_module() -> None:
    readers = {
        _name(path)
        for path in MODULES
        if path != SETTINGS_READER
        and any(_reads_focus_setting(node) for node in ast.walk(_tree(path)))
    }
    assert not readers, f"FOCUS_* settings read outside scrapy_focus.config: {sorted(readers)}"


def test_no_module_level_registries() -> None:
    """Components find each other through the crawl's runtime, not module tables."""
    found = []
    for path in MODULES:
        for node in _tree(path).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Call):
                func = value.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in {"WeakKeyDictionary", "WeakValueDictionary"}:
                    found.append(f"{_name(path)}:{node.lineno}")
    assert not found, f"module-level registries: {found}"


def _written_meta_keys(tree: ast.Module) -> set[str]:
    """Constant keys stored into ``<x>.meta[...]``, ``meta[...]`` or a ``meta=`` dict."""
    keys: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if not isinstance(target, ast.Subscript):
                continue
            owner = target.value
            is_meta = (isinstance(owner, ast.Attribute) and owner.attr == "meta") or (
                isinstance(owner, ast.Name) and owner.id == "meta"
            )
            key = target.slice
            if is_meta and isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
        if (
            isinstance(node, ast.keyword)
            and node.arg == "meta"
            and isinstance(node.value, ast.Dict)
        ):
            for key in node.value.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keys.add(key.value)
    return keys


def test_one_meta_key_of_ours() -> None:
    written: dict[str, set[str]] = {}
    for path in MODULES:
        allowed = FOREIGN_META_KEYS | {"focus"}
        if path.parent.name == "commands":
            allowed |= USER_META_KEYS
        for key in _written_meta_keys(_tree(path)) - allowed:
            written.setdefault(key, set()).add(_name(path))
    assert not written, f"meta keys written besides 'focus': {written}"
