"""Per host, the element that holds the main text, learnt from the crawl's own pages.

Contract: :meth:`Templates.options_for` says how to extract a page (the options
the worker gets), :meth:`Templates.learn` takes what the worker saw.  A host's
pages are extracted by trafilatura, and from its second page on the worker also
names the elements that hold trafilatura's main text and how well each one's own
text (:func:`.container.render`) agrees with it (``Extraction.containers``).
Once one name has agreed (word F1 ≥ ``agreement``) on ``confirm`` learnt pages in a
row, the host's pages are read from that element (``Extraction.container``), and
some of them again by trafilatura (audits: the ``audit_every``-th templated page,
then twice as many pages later each time, at least one in ``8 * audit_every``):
an audit where the element disagrees ends the template, and the host learns
again.  A host whose pages never agree stops being learnt from, but for one page
in ``audit_every``.

Which pages a template reads depends on the order ``options_for`` and ``learn``
are called in.  Where the crawl keeps its order, the middleware calls
``options_for`` as a page is handed out and ``learn`` at its response's turn, so
that both follow the order of the evidence, not of the extractions
(``ExtractionMiddleware``).

The worker falls back to trafilatura on its own where the element is missing or
is mostly links (a hub or an index page); such a page says nothing for or
against the template.  State lives in the crawl's process, bounded to
``max_hosts`` hosts (the least recently seen are forgotten); it is not saved with
``JOBDIR`` (a resumed crawl learns again in a few pages).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from scrapy_focus.engines.headers import origin_of
from scrapy_focus.extract.options import ExtractOptions

if TYPE_CHECKING:
    from scrapy_focus.extract.page import Extraction

#: Word F1 of the element's text against trafilatura's that counts as the same text.
AGREEMENT = 0.97
#: Learnt pages in a row on which one name must agree.
CONFIRM = 3
#: The first audit of a template is at this many templated pages (then 2x, 4x, 8x, and
#: every 8x); a host that never agreed is learnt from on one page in this many.
AUDIT_EVERY = 8


@dataclass
class _Host:
    pages: int = 0  # pages submitted
    learnt: int = 0  # learnt pages without a template
    streaks: dict[str, int] = field(default_factory=dict)  # name -> agreeing pages in a row
    template: str | None = None
    templated: int = 0  # pages sent with the template since it was confirmed


@dataclass(frozen=True)
class Learnt:
    """What a learnt page changed: ``"confirmed"``, ``"revoked"`` or None."""

    event: str | None
    host: str


class Templates:
    def __init__(
        self,
        agreement: float = AGREEMENT,
        confirm: int = CONFIRM,
        audit_every: int = AUDIT_EVERY,
        max_hosts: int = 10_000,
    ) -> None:
        self.agreement = agreement
        self.confirm = confirm
        self.audit_every = audit_every
        self.max_hosts = max_hosts
        self._hosts: OrderedDict[str, _Host] = OrderedDict()

    def template(self, url: str) -> str | None:
        host = self._hosts.get(_host(url))
        return host.template if host else None

    def options_for(self, url: str, options: ExtractOptions) -> ExtractOptions:
        """The options to extract *url* with: the host's template, or learning, or neither."""
        host = self._host(url)
        host.pages += 1
        if host.template is not None:
            host.templated += 1
            if self._audit_due(host.templated):  # an audit: trafilatura, and learn
                return replace(options, template=None, learn_template=True)
            return replace(options, template=host.template, learn_template=True)
        if host.pages == 1:  # a host's first page has nothing to agree with yet
            return options
        giving_up = host.learnt >= self.confirm * 4
        if giving_up and host.pages % self.audit_every:
            return options
        return replace(options, learn_template=True)

    def learn(self, url: str, extraction: Extraction) -> Learnt:
        """Take what the worker saw on a page of *url*'s host."""
        key = _host(url)
        host = self._hosts.get(key)
        if host is None or extraction.container is not None or not extraction.containers:
            return Learnt(None, key)  # templated, or nothing said for or against
        agreeing = {name for name, score in extraction.containers if score >= self.agreement}
        if host.template is not None:
            if host.template in agreeing:
                return Learnt(None, key)
            host.template, host.templated, host.learnt = None, 0, 0
            host.streaks = dict.fromkeys(agreeing, 1)
            return Learnt("revoked", key)
        host.learnt += 1
        host.streaks = {name: host.streaks.get(name, 0) + 1 for name in agreeing}
        # the names come deepest first: of those confirmed, the innermost element
        confirmed = [name for name, _ in extraction.containers if name in host.streaks
                     and host.streaks[name] >= self.confirm]  # fmt: skip
        if not confirmed:
            return Learnt(None, key)
        host.template, host.templated = confirmed[0], 0
        return Learnt("confirmed", key)

    def _audit_due(self, templated: int) -> bool:
        """Audits at the template's ``audit_every``-th page, then at twice as many pages
        each time (a template that keeps agreeing is checked less often), at least once
        in every ``audit_every * 8`` pages."""
        if templated < self.audit_every:
            return False
        spaced = self.audit_every * 8
        if templated >= spaced:
            return templated % spaced == 0
        return templated & (templated - 1) == 0 and templated % self.audit_every == 0

    def _host(self, url: str) -> _Host:
        key = _host(url)
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host()
            if len(self._hosts) > self.max_hosts:
                self._hosts.popitem(last=False)
        else:
            self._hosts.move_to_end(key)
        return host


def _host(url: str) -> str:
    scheme, host, port = origin_of(url)
    return f"{scheme}://{host}:{port}"
