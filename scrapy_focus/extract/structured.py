"""Structured data of a page: JSON-LD, OpenGraph and microdata, bounded.

Read from the parsed tree before the main-text extraction consumes it.  Broken
JSON-LD is read leniently or counted as an error, never raised; nesting, item
and value sizes are bounded.
"""

from __future__ import annotations

import json
import re
from typing import Any

import lxml.html

_SPACES = re.compile(r"\s+")


def json_ld(tree: lxml.html.HtmlElement) -> tuple[list[Any], int]:
    found: list[Any] = []
    errors = 0
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        raw = (script.text or "").strip()
        if not raw:
            continue
        try:
            data = json.loads(raw)
        except RecursionError:  # nested past the interpreter's stack: hostile, not broken
            errors += 1
            continue
        except ValueError:
            data = _lenient_json(raw)
            if data is None:
                errors += 1
                continue
        if _too_deep(data, JSON_LD_MAX_DEPTH):
            # Parsed, but every consumer (pickling back from the worker, the exports)
            # recurses too, and no schema.org graph needs this many levels.
            errors += 1
            continue
        found.extend(data if isinstance(data, list) else [data])
    return found, errors


#: JSON-LD nested deeper than this counts as an error (schema.org graphs nest a few levels).
JSON_LD_MAX_DEPTH = 32


def _too_deep(data: Any, limit: int) -> bool:
    """True if *data* nests lists/dicts more than *limit* levels; without recursion."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def _lenient_json(raw: str) -> Any:
    """Breakage seen in the wild: HTML or JS comments, CDATA wrappers, trailing commas,
    control characters, a trailing semicolon, or garbage after the first value."""
    cleaned = raw.replace("<!--", "").replace("-->", "")
    cleaned = cleaned.replace("<![CDATA[", "").replace("]]>", "")
    cleaned = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", cleaned))
    cleaned = _TRAILING_COMMA.sub(r"\1", _CONTROL.sub(" ", cleaned)).strip().rstrip(";")
    try:
        return json.loads(cleaned, strict=False)
    except (ValueError, RecursionError):
        pass
    try:  # a valid value followed by garbage (two objects back to back, stray text)
        return json.JSONDecoder(strict=False).raw_decode(cleaned)[0]
    except (ValueError, RecursionError):
        return None


def opengraph(tree: lxml.html.HtmlElement) -> dict[str, str]:
    found: dict[str, str] = {}
    for meta in tree.xpath("//meta[starts-with(@property, 'og:')]"):
        key, value = meta.get("property"), meta.get("content")
        if key and value and key not in found:
            found[key] = value.strip()
    return found


_MICRODATA_ITEMS = 20
_MICRODATA_PROPERTIES = 50
_MICRODATA_VALUE_CHARS = 500
_URL_PROPERTY_TAGS = {
    "a": "href",
    "link": "href",
    "area": "href",
    "img": "src",
    "audio": "src",
    "video": "src",
    "source": "src",
    "iframe": "src",
    "embed": "src",
    "object": "data",
}


def microdata(tree: lxml.html.HtmlElement) -> list[dict[str, Any]]:
    """Top-level ``itemscope`` items as ``{"@type": ..., prop: value or [values]}``;
    nested items become nested dicts.  Bounded in items, properties and value size."""
    roots = tree.xpath("//*[@itemscope][not(ancestor::*[@itemscope])]")
    return [_item(root, depth=0) for root in roots[:_MICRODATA_ITEMS]]


def _item(scope: lxml.html.HtmlElement, depth: int) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if itemtype := (scope.get("itemtype") or "").strip():
        item["@type"] = itemtype
    properties = 0
    stack = list(reversed(scope))
    while stack and properties < _MICRODATA_PROPERTIES:
        node = stack.pop()
        if not isinstance(node.tag, str):
            continue
        names = (node.get("itemprop") or "").split()
        nested = node.get("itemscope") is not None
        if names:
            if nested:
                value: Any = _item(node, depth + 1) if depth < 3 else {}
            else:
                value = _property_value(node)
            for name in names:
                properties += 1
                if name in item:
                    previous = item[name]
                    item[name] = (
                        [*previous, value] if isinstance(previous, list) else [previous, value]
                    )
                else:
                    item[name] = value
        if not nested:
            stack.extend(reversed(node))
    return item


def _property_value(node: lxml.html.HtmlElement) -> str:
    tag = node.tag
    if node.get("content") is not None:
        value = node.get("content", "")
    elif tag in _URL_PROPERTY_TAGS:
        value = node.get(_URL_PROPERTY_TAGS[tag], "")
    elif tag in ("time", "data", "meter"):
        value = node.get("datetime") or node.get("value") or element_text(node)
    else:
        value = element_text(node)
    return value.strip()[:_MICRODATA_VALUE_CHARS]


def element_text(element: lxml.html.HtmlElement) -> str:
    """The visible text of *element*, whitespace collapsed."""
    return _SPACES.sub(" ", element.text_content()).strip()
