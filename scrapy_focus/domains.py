"""Host names and allowed-domain entries: their canonical forms, and what a seed adds.

* :func:`idna_host` spells a host as every request URL does (IDNA ASCII,
  lower-case); :func:`is_ip_address` tells an address from a name;
* :func:`registrable_domain` is a host's registrable domain by the Public
  Suffix List (the snapshot bundled with ``tldextract``: nothing fetched);
* :func:`scope_entry` is an allowed-domain entry (``host`` or ``host:port``) in
  its canonical form, :func:`split_entry` its host and port;
* :func:`seed_entries` is what a seed adds to a crawl's allowed domains
  (``FOCUS_SEED_SCOPE``).
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Any
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


def is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _public_suffixes() -> Any:
    import tldextract

    # The snapshot bundled with the package: no list fetched over the network, no
    # cache file written; the private section (github.io, blogspot.com) included,
    # so one user's site there is not everyone's.
    return tldextract.TLDExtract(
        cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True
    )


@functools.lru_cache(maxsize=4096)
def registrable_domain(host: str) -> str:
    """The registrable domain of *host* by the Public Suffix List (its public or
    private suffix plus one label: ``www.bbc.co.uk`` → ``bbc.co.uk``,
    ``alice.github.io`` → itself); the host itself when it is an IP address, a
    public suffix or a name the list does not know (``localhost``)."""
    host = idna_host(host)
    if is_ip_address(host):
        return host
    return _public_suffixes()(host).top_domain_under_public_suffix or host


def idna_host(host: str) -> str:
    """*host* lower-cased, its labels in IDNA ASCII form (``bücher.de`` →
    ``xn--bcher-kva.de``), the form every request URL's host has."""
    host = host.strip().rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host  # not a name IDNA can spell: it matches nothing but itself


def scope_entry(entry: str) -> str:
    """An allowed-domain entry in its canonical form: ``host`` or ``host:port``,
    the host in IDNA ASCII, lower-case.  Raises ValueError for an entry that is
    not a host with an optional port (a URL, a path, a port that is no number)."""
    text = entry.strip()
    if not text or "/" in text or "@" in text:
        raise ValueError(f"not a domain or domain:port: {entry!r}")
    host, port = text, ""
    if text.startswith("["):  # [IPv6] or [IPv6]:port
        close = text.find("]")
        host, rest = text[: close + 1], text[close + 1 :]
        if close < 0 or (rest and not rest.startswith(":")):
            raise ValueError(f"not a domain or domain:port: {entry!r}")
        port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    elif ":" in text:
        host = f"[{text}]"  # a bare IPv6 address
    host = idna_host(host.lstrip("."))
    if not host or (port and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(f"not a domain or domain:port: {entry!r}")
    return f"{host}:{int(port)}" if port else host


def split_entry(entry: str) -> tuple[str, int | None]:
    """A canonical entry's host and port (None: the default ports)."""
    if entry.startswith("["):
        close = entry.index("]")
        host, port = entry[: close + 1], entry[close + 2 :]
    else:
        host, _, port = entry.partition(":")
    return host, int(port) if port else None


def seed_entries(url: str, mode: str) -> tuple[str, ...]:
    """What a seed adds to a crawl's allowed domains (``FOCUS_SEED_SCOPE``).

    ``"host"``: its host; ``"domain"``: its registrable domain
    (:func:`registrable_domain`); ``"port"``: nothing but its own port, for a
    crawl whose domains are given.  A seed on a port other than its scheme's
    default also admits that port (``host:8080``); the default ports stay in.
    """
    parts = urlsplit(url)
    host = idna_host(parts.hostname or "")
    if not host:
        return ()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port == DEFAULT_PORTS.get(parts.scheme.lower()):
        port = None
    if mode == "port":
        return (f"{host}:{port}",) if port is not None else ()
    domain = registrable_domain(host) if mode == "domain" else host
    return (domain, f"{domain}:{port}") if port is not None else (domain,)
