"""Frontier entries on disk: a request's dict as data that never names code.

The frontier keeps each queued request as ``Request.to_dict()`` output in LMDB
(under ``JOBDIR`` when the crawl is resumable).  Pickle is the one format that
holds what such a dict holds (bytes headers, a body, nested meta) at the speed
the frontier needs, but a pickle read back can import and call anything.  So:

* :func:`dump_entry` pickles only plain data: ``None``, booleans, numbers, ``str``,
  ``bytes``, and lists, tuples, dicts and sets of them, plus the few classes in
  :data:`ALLOWED_CLASSES` (scrapy-playwright's ``PageMethod``, so a resumed crawl
  keeps a request's page methods), and the request's
  :class:`~scrapy_focus.state.FocusState`, which pickles as its record (plain
  data) and one call, :data:`STATE_LOADER`.  Anything else (a lambda, an object in meta)
  raises :class:`UnsafePayload`: the scheduler keeps that request in memory, as
  Scrapy's own JOBDIR queues keep what they cannot pickle;
* :func:`load_entry` refuses every global a pickle names but those classes and
  :data:`STATE_LOADER` (which builds a state from data and runs nothing else),
  so an entry written by someone else is an unreadable entry, never code;
* :func:`to_request` builds the request, resolving the dict's ``_class`` to a
  ``Request`` subclass only in a module already imported: reading an entry
  imports nothing.
"""

from __future__ import annotations

import io
import pickle
import sys
from typing import Any

from scrapy import Request
from scrapy.utils.request import request_from_dict

from scrapy_focus import state

#: (module, name) of the classes an entry may hold besides plain data.
ALLOWED_CLASSES: frozenset[tuple[str, str]] = frozenset({("scrapy_playwright.page", "PageMethod")})
#: (module, name) of the one function an entry may call: a request state from its record.
STATE_LOADER = ("scrapy_focus.state", "_from_record")


class UnsafePayload(pickle.PicklingError, pickle.UnpicklingError):
    """What an entry holds, or would hold, is not plain data."""


class _DataPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # Called for every object but exact None, bool, int, float, str, bytes,
        # list, tuple, dict, set and frozenset, which pickle as they are.
        if type(obj) is state.FocusState:
            return obj.__reduce__()  # its record, as plain data
        if obj is state._from_record:
            return NotImplemented  # pickled as the global it is
        cls = obj if isinstance(obj, type) else type(obj)  # an allowed class, or one of its own
        if (cls.__module__, cls.__qualname__) in ALLOWED_CLASSES:
            return NotImplemented
        raise UnsafePayload(f"{cls.__module__}.{cls.__qualname__} is not plain data")


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == STATE_LOADER:
            return state._from_record
        if (module, name) not in ALLOWED_CLASSES:
            raise UnsafePayload(f"a frontier entry names {module}.{name}: refused")
        return super().find_class(module, name)


def dump_entry(data: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    _DataPickler(buffer, protocol=5).dump(data)
    return buffer.getvalue()


def load_entry(payload: bytes) -> dict[str, Any]:
    data = _DataUnpickler(io.BytesIO(payload)).load()
    if not isinstance(data, dict):
        raise UnsafePayload(f"a frontier entry holds a {type(data).__name__}, not a dict")
    return data


def request_class(data: dict[str, Any]) -> type[Request]:
    """The Request class an entry names, from the modules already loaded."""
    path = data.get("_class")
    if path is None:
        return Request
    module_name, _, name = str(path).rpartition(".")
    module = sys.modules.get(module_name)
    cls = getattr(module, name, None) if module is not None else None
    if not (isinstance(cls, type) and issubclass(cls, Request)):
        raise UnsafePayload(f"a frontier entry names {path}: not a loaded Request class")
    return cls


def to_request(data: dict[str, Any], spider: Any) -> Request:
    """The request an entry's dict describes (callbacks looked up on *spider*)."""
    request_class(data)  # refused unless already loaded: request_from_dict then imports nothing
    return request_from_dict(data, spider=spider)
