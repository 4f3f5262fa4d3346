"""The edge's form parser reads every body exactly as urllib.parse.parse_qs (strict) does."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.slack.http.edge import parse_form


def stdlib(body: str) -> dict[str, list[str]] | str:
    try:
        return parse_qs(body, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        return "refused"


def ours(body: str) -> dict[str, list[str]] | str:
    try:
        return parse_form(body)
    except ValueError:
        return "refused"


@settings(max_examples=1500)
@given(st.text(alphabet=st.sampled_from(list("ab=&%+2F4e9zZé;C3A9")), max_size=40))
def test_any_body_parses_or_is_refused_as_the_stdlib_does(body: str) -> None:
    assert ours(body) == stdlib(body)


@settings(max_examples=500)
@given(st.dictionaries(st.text(min_size=1), st.text()))
def test_encoded_fields_read_back_as_the_stdlib_reads_them(fields: dict[str, str]) -> None:
    body = urlencode(fields)
    assert ours(body) == stdlib(body) == {k: [v] for k, v in fields.items()}


def test_a_multibyte_character_split_across_escapes_and_a_bad_escape() -> None:
    assert parse_form("t=%C3%A9t%C3%A9+%zz&x=") == {"t": ["été %zz"], "x": [""]}
