"""Links handed to signers (service/link_safety.py): each bad link refused with its reason (pure)."""

from __future__ import annotations

import pytest

from airflow_provider_docsign.service.link_safety import label_script_problem, link_problem

#: A bad link, and words its reason must hold.
BAD = [
    # not https
    ("http://example.com/terms", "it must use https, not http: only https links are allowed"),
    ("HTTP://example.com/terms", "it must use https, not http"),
    ("javascript:alert(1)", "not a 'javascript' URL"),
    ("data:text/html,<b>x</b>", "not a 'data' URL"),
    ("ftp://example.com/terms", "not a 'ftp' URL"),
    ("example.com/terms", "it is not a URL"),
    ("//example.com/terms", "it is not a URL"),
    ("", "it is empty"),
    # white space, which browsers drop and Python keeps
    ("https://example.com/a b", "white space or a control character (U+0020)"),
    ("https://exa\tmple.com/", "white space or a control character (U+0009)"),
    (" https://example.com/", "white space or a control character (U+0020)"),
    # credentials
    ("https://www.yourbank.example@evil.example/login", "('www.yourbank.example', before an '@')"),
    ("https://user:secret@evil.example/", "user name or password ('user:secret'"),
    ("https://@evil.example/", "user name or password (an empty one"),
    ("https://good.example%5C@evil.example/", "user name or password"),
    # Python and browsers read another host
    ("https://good.example\\@evil.example/", "Python reads its host as 'evil.example'"),
    ("https://evil\\x.example/", "Python reads its host as 'evil\\\\x.example' and browsers (the WHATWG"),
    ("https:evil.example/", "Python reads its host as missing and browsers"),
    ("https:/evil.example/", "Python reads its host as missing"),
    ("https:\\\\evil.example/", "Python reads its host as missing"),
    ("https:///evil.example/", "Python reads its host as missing"),
    ("https://example.com:99999/", "it is not a URL"),
    # a host label that mixes scripts
    ("https://\u0430pple.com/", "its host label '\u0430pple (xn--pple-43d)' mixes scripts: Cyrillic"),
    (
        "https://xn--pple-43d.com/",
        "'\u0430pple (xn--pple-43d)' mixes scripts: Cyrillic ('\u0430') with Latin",
    ),
    ("https://XN--PPLE-43D.com/", "mixes scripts"),
    ("https://g\u043e\u043egle.com/", "mixes scripts: Cyrillic ('\u043e') with Latin ('gle')"),
    ("https://\u03b1pple.com/", "mixes scripts: Greek ('\u03b1') with Latin"),
    ("https://login.\u0440\u0430ypal.com/x", "its host label"),
    ("https://xn--zz.example/", "its host label 'xn--zz' is not valid IDNA (punycode)"),
]

GOOD = [
    "https://example.com/terms?v=2#top",
    "https://files.example.com:8443/p.pdf",
    "HTTPS://EXAMPLE.COM/",
    "https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/",  # пример.рф: Cyrillic only
    "https://xn--e1afmkfd.xn--p1ai/",  # the same, as the parser writes it
    "https://b\u00fccher.example/",  # Latin only
    "https://xn--bcher-kva.example/",
    "https://\u03c0\u03b1\u03c1\u03ac\u03b4\u03b5\u03b9\u03b3\u03bc\u03b1.\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae/",
    "https://\u4f8b\u3048.\u30c6\u30b9\u30c8/",  # Han with Hiragana, and Katakana
    "https://abc\u65e5\u672c\u8a9e.jp/",  # Latin with Han: allowed (UTS #39 highly restrictive)
    "https://shop-2024.example/\u00fcber?q=\u0430",  # the path and the query may hold anything
    "https://127.0.0.1/a",
    "https://[2001:db8::1]/a",
]


@pytest.mark.parametrize(("url", "reason"), BAD)
def test_a_bad_link_is_refused_with_its_reason(url: str, reason: str) -> None:
    why = link_problem(url)
    assert why is not None, url
    assert reason in why, why
    assert why.isprintable()


@pytest.mark.parametrize("url", GOOD)
def test_good_links_and_single_script_international_hosts_pass(url: str) -> None:
    assert link_problem(url) is None


def test_http_is_a_choice_of_the_caller_the_rest_is_not() -> None:
    assert link_problem("http://example.com/done", https_only=False) is None
    for url, _ in BAD[9:]:
        assert link_problem(url, https_only=False) is not None, url
    assert "only http and https links" in (link_problem("javascript:x", https_only=False) or "")


def test_script_mixes_that_uts39_allows() -> None:
    assert label_script_problem("example") is None
    assert label_script_problem("xn--e1afmkfd") is None  # пример
    assert label_script_problem("123-456") is None  # Common only
    assert label_script_problem("\u65e5\u672c\u3054\u30c6") is None  # Han, Hiragana, Katakana
    assert label_script_problem("abc\ud55c\uad6d") is None  # Latin with Hangul (with Han allowed too)
    mixed = label_script_problem("\u0430\u03b1a")
    assert mixed is not None
    assert "Cyrillic" in mixed
    assert "Greek" in mixed
    assert "Latin" in mixed


def test_every_check_bounds_its_own_input() -> None:
    from airflow_provider_docsign.service.link_safety import MAX_LABEL_LENGTH, MAX_LINK_LENGTH, link_scheme

    long_link = "https://example.com/" + "a" * MAX_LINK_LENGTH
    for https_only in (True, False):
        assert link_problem(long_link, https_only=https_only) == (
            f"it is {len(long_link)} characters long; a link may hold at most {MAX_LINK_LENGTH}"
        )
    assert link_problem("https://example.com/" + "a" * (MAX_LINK_LENGTH - 20)) is None  # at the limit
    assert link_scheme(long_link) is None
    assert link_scheme("https://example.com/") == "https"
    label = "a" * (MAX_LABEL_LENGTH + 1)
    assert label_script_problem(label) == (
        f"its host label {'a' * 40!r}... is {MAX_LABEL_LENGTH + 1} characters long; DNS allows at most 63"
    )
    assert label_script_problem("xn--" + "a" * 10_000) is not None
    assert label_script_problem("a" * MAX_LABEL_LENGTH) is None
    found = link_problem(f"https://{label}.example/")
    assert found is not None
    assert "DNS allows at most 63" in found
