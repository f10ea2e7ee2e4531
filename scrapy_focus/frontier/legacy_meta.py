"""Request flags other components still write as meta keys of their own.

The engine ladder and the corpus's re-queue mark a request ``focus_refresh``
(fetch it from the network) and ``focus_requeue`` (the corpus sent it back)
in ``request.meta``; the extraction middleware leaves its result under
``focus_extraction``.  Their request state (:mod:`scrapy_focus.state`) holds
the same facts as ``state.refresh``, ``state.requeue`` and
``state.extraction``; the frontier reads each through one function here, which
takes either.  Once no component writes the meta keys, each function is the
state's field and this module goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_focus.state import FocusState


def refresh(request: Request, state: FocusState | None) -> bool:
    return (state is not None and state.refresh) or bool(request.meta.get("focus_refresh"))


def requeued(request: Request, state: FocusState | None) -> bool:
    return (state is not None and state.requeue) or "focus_requeue" in request.meta


def extraction(response: Response, state: FocusState | None) -> Any:
    if state is not None and state.extraction is not None:
        return state.extraction
    return response.meta.get("focus_extraction")
