"""scrapy_focus.text.decode: the one place bytes become text."""

from __future__ import annotations

import codecs
import gzip
from pathlib import Path

import pytest

from scrapy_focus.text import decode

FRENCH = "<p>café crème brûlée à la française, naïve</p>"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.parametrize(
    ("bom", "codec"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ],
)
def test_byte_order_mark_wins_over_every_declaration(bom: bytes, codec: str) -> None:
    body = bom + FRENCH.encode(codec)
    decoded = decode(body, "text/html; charset=iso-8859-1")
    assert decoded.text == FRENCH
    assert decoded.source == "bom"
    assert decoded.replacements == 0


def test_header_charset_wins_over_meta_charset() -> None:
    body = ('<meta charset="koi8-r">' + FRENCH).encode("cp1252")
    decoded = decode(body, "text/html; charset=windows-1252")
    assert decoded.source == "header"
    assert decoded.encoding == "cp1252"
    assert FRENCH in decoded.text


def test_meta_charset_is_used_without_a_header_charset() -> None:
    text = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>Привет, мир</p>'
    decoded = decode(text.encode("koi8-r"), "text/html")
    assert (decoded.source, decoded.encoding) == ("meta", "koi8-r")
    assert "Привет, мир" in decoded.text


def test_content_type_may_be_bytes_as_scrapy_headers_give_it() -> None:
    decoded = decode(FRENCH.encode("cp1252"), b"text/html; charset=latin-1")
    assert decoded.text == FRENCH


def test_latin1_declared_on_utf8_bytes_decodes_as_utf8() -> None:
    decoded = decode(FRENCH.encode("utf-8"), "text/html; charset=ISO-8859-1")
    assert decoded.text == FRENCH
    assert decoded.encoding == "utf-8"


def test_utf8_declared_on_windows_1252_bytes_is_detected() -> None:
    decoded = decode(FRENCH.encode("cp1252"), "text/html; charset=utf-8")
    assert decoded.text == FRENCH
    assert decoded.source == "detected"
    assert decoded.replacements == 0


def test_a_correct_single_byte_declaration_is_kept() -> None:
    decoded = decode(FRENCH.encode("latin-1"), "text/html; charset=iso-8859-1")
    assert decoded.text == FRENCH
    assert decoded.source == "header"


def test_unknown_charset_name_falls_back_to_utf8() -> None:
    decoded = decode(FRENCH.encode("utf-8"), "text/html; charset=no-such-charset")
    assert decoded.text == FRENCH


def test_meta_utf16_means_utf8() -> None:
    decoded = decode(('<meta charset="utf-16">' + FRENCH).encode("utf-8"))
    assert FRENCH in decoded.text
    assert decoded.encoding == "utf-8"


def test_undeclared_legacy_encodings_are_detected() -> None:
    russian = "<p>Съешь же ещё этих мягких французских булок, да выпей же чаю.</p>" * 3
    japanese = "<p>日本語のテキストです。これは文字コードの判定のテストです。</p>" * 3
    assert decode(russian.encode("cp1251")).text == russian
    assert decode(japanese.encode("shift_jis")).text == japanese


@pytest.mark.parametrize(
    "body",
    [
        bytes(range(256)) * 20,
        b"\xff\xfe\x00",  # a UTF-16 BOM and half a character
        b"\xef\xbb\xbf\xff\xff",  # a UTF-8 BOM, then bytes that are never UTF-8
        b"<p>caf\xe9 \x81\x8d\x8f\x90\x9d</p>",  # undefined even in windows-1252
        b"\x00" * 1000,
    ],
)
def test_undecodable_bytes_never_raise(body: bytes) -> None:
    for content_type in (None, "text/html; charset=utf-8", "text/html; charset=shift_jis"):
        decoded = decode(body, content_type)
        assert isinstance(decoded.text, str)
        assert decoded.replacements == decoded.text.count("\ufffd")


def test_empty_body_is_empty_text() -> None:
    decoded = decode(b"")
    assert decoded.text == ""
    assert decoded.replacements == 0
    assert decode(b"", "text/html; charset=utf-8").text == ""


@pytest.mark.skipif(not DATA.exists(), reason="shared/data not laid out")
def test_real_pages_decode_without_replacements() -> None:
    pages = sorted((DATA / "wcxb-dev" / "html").glob("*.html.gz"))[:40]
    assert pages
    for path in pages:
        decoded = decode(gzip.decompress(path.read_bytes()))
        assert decoded.replacements == 0, path.name
