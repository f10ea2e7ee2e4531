"""Requests as JSON for scrapy-redis's queues: ``SCHEDULER_SERIALIZER =
"scrapy_focus.cluster.serializer"``.

scrapy-redis asks a serializer module for ``dumps(obj) -> bytes`` and
``loads(bytes) -> obj``, *obj* being ``Request.to_dict(spider=...)`` output (its
callbacks by name).  Its default is pickle: whoever can write to the Redis runs
code on every node.  This one writes JSON and reads it back as data:

* ``bytes`` (a body, header names and values) are ``{"$b": "<base64>"}``; a
  request's :class:`~scrapy_focus.state.FocusState` is ``{"$focus": <its record>}``
  (read back with ``FocusState.from_record``, which takes data only); a dict with
  a key JSON has no type for (bytes, a tuple) or a key starting with ``$`` is
  ``{"$map": [[key, value], ...]}``; as in any JSON, tuples and sets become lists
  and number keys strings;
* anything else (an object in meta) raises ``TypeError`` at ``dumps``: the
  queue says so and does not store that request;
* ``loads`` accepts at most :data:`MAX_ENTRY` bytes of JSON whose top level is an
  object and raises ``ValueError`` for anything else; no name in it is imported
  or called (``_class`` is resolved by the queue among classes already loaded).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from scrapy_focus.state import FocusState

MAX_ENTRY = 1024 * 1024  # bytes of one encoded request


def _plain_key(key: Any) -> bool:
    """A key JSON writes itself (a number becomes its string, as in any JSON)."""
    if isinstance(key, str):
        return not key.startswith("$")
    return key is None or isinstance(key, (bool, int, float))


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, FocusState):
        return {"$focus": _encode(value.to_record())}
    if isinstance(value, dict):
        if all(_plain_key(k) for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {"$map": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_encode(item) for item in value]
    raise TypeError(f"{type(value).__module__}.{type(value).__qualname__} is not plain data")


def _tagged(value: dict[str, Any]) -> Any:
    """``json.loads``'s object hook: a tag back to its value (inner objects first)."""
    if len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "$b" and isinstance(inner, str):
            return base64.b64decode(inner, validate=True)
        if tag == "$focus" and isinstance(inner, dict):
            return FocusState.from_record(inner)
        if tag == "$map" and isinstance(inner, list):
            return {_hashable(k): v for k, v in inner}
    if any(key.startswith("$") for key in value):
        raise ValueError(f"unknown tag in a queued request: {sorted(value)[:3]}")
    return value


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


class _Tags:
    """``json.dumps``'s default hook for what JSON has no type for, counting the
    tags it writes (so :func:`dumps` can tell them from a ``"$`` of the data)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            self.count += 1
            return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, FocusState):
            self.count += 1
            return {"$focus": value.to_record()}
        if isinstance(value, (set, frozenset)):
            return list(value)
        raise TypeError(f"{type(value).__module__}.{type(value).__qualname__} is not plain data")


def _fast(obj: Any) -> str | None:
    """The JSON of a request's dict in one pass of the C encoder; None when it holds
    what needs the full walk (keys that are not strings, a ``"$`` of its own)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("headers", {}), dict):
        return None
    prepared = dict(obj)
    tags = _Tags()
    if "headers" in prepared:
        prepared["headers"] = {"$map": [[k, v] for k, v in obj["headers"].items()]}
        tags.count += 1
    try:
        text = json.dumps(prepared, separators=(",", ":"), allow_nan=False, default=tags)
    except TypeError as error:
        if "is not plain data" in str(error):
            raise
        return None  # a key that is not a string: the full walk says what to do
    return text if text.count('"$') == tags.count else None


def dumps(obj: Any) -> bytes:
    text = _fast(obj)
    if text is None:
        text = json.dumps(_encode(obj), separators=(",", ":"), allow_nan=False)
    raw = text.encode()
    if len(raw) > MAX_ENTRY:
        raise ValueError(f"a request of {len(raw)} bytes encoded, above {MAX_ENTRY}")
    return raw


def loads(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_ENTRY:
        raise ValueError(f"a queued request of {len(raw)} bytes, above {MAX_ENTRY}")
    try:
        data = json.loads(raw, object_hook=_tagged)
    except (UnicodeDecodeError, TypeError, AttributeError, ValueError, RecursionError) as error:
        raise ValueError(f"a queued request that is not valid JSON data: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise ValueError("a queued request that is not a request's dict")
    return data
