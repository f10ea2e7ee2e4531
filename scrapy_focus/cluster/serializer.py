"""Requests as JSON for scrapy-redis's queues: ``SCHEDULER_SERIALIZER =
"scrapy_focus.cluster.serializer"``.

scrapy-redis asks a serializer module for ``dumps(obj) -> bytes`` and
``loads(bytes) -> obj``, *obj* being ``Request.to_dict(spider=...)`` output (its
callbacks by name).  Its default is pickle: whoever can write to the Redis runs
code on every node.  This one writes JSON and reads it back as data:

* ``bytes`` (a body, header names and values) are ``{"$b": "<base64>"}``; a
  request's :class:`~scrapy_focus.state.FocusState` is ``{"$focus": <its record>}``
  (read back with ``FocusState.from_record``, which takes data only); a dict whose
  keys are not all strings, or has a key starting with ``$``, is
  ``{"$map": [[key, value], ...]}``; tuples and sets become lists;
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


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, FocusState):
        return {"$focus": _encode(value.to_record())}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {"$map": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_encode(item) for item in value]
    raise TypeError(f"{type(value).__module__}.{type(value).__qualname__} is not plain data")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "$b" and isinstance(inner, str):
            return base64.b64decode(inner, validate=True)
        if tag == "$focus" and isinstance(inner, dict):
            return FocusState.from_record(_decode(inner))
        if tag == "$map" and isinstance(inner, list):
            return {_hashable(_decode(k)): _decode(v) for k, v in inner}
    if any(key.startswith("$") for key in value):
        raise ValueError(f"unknown tag in a queued request: {sorted(value)[:3]}")
    return {key: _decode(item) for key, item in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def dumps(obj: Any) -> bytes:
    raw = json.dumps(_encode(obj), separators=(",", ":"), allow_nan=False).encode()
    if len(raw) > MAX_ENTRY:
        raise ValueError(f"a request of {len(raw)} bytes encoded, above {MAX_ENTRY}")
    return raw


def loads(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_ENTRY:
        raise ValueError(f"a queued request of {len(raw)} bytes, above {MAX_ENTRY}")
    try:
        data = _decode(json.loads(raw))
    except (UnicodeDecodeError, TypeError, AttributeError, ValueError) as error:
        raise ValueError(f"a queued request that is not valid JSON data: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise ValueError("a queued request that is not a request's dict")
    return data
