"""Character classes, clean paths, journal names, endpoints and store URLs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gazette_core.broker.protocol.names_ext import (
    split_meta,
    strip_meta,
    validate_endpoint,
    validate_journal_name,
    validate_path_chars,
    validate_store_url,
    validate_token,
)
from gazette_core.errors import ValidationError

TOKEN_HELP = "(allowed: letters, numbers and -_+/.)"
PATH_HELP = "(allowed: letters, numbers and -_+/.=%)"
CLEAN_HELP = '(no "//", no "." or ".." segments, no trailing "/")'


def test_character_classes_accept_unicode_letters_and_numbers() -> None:
    validate_token("zone-a_1+/.", 1, 32, "zone")
    validate_token("\u00e9t\u00e9\u0663", 1, 32, "zone")  # letters and an Arabic-Indic digit
    validate_path_chars("a=b%20/c", 0, 64, "value")
    validate_path_chars("", 0, 64, "value")


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (
            lambda v: validate_token(v, 2, 64, "name"),
            "a",
            'name: invalid length of "a": expected 2 <= length <= 64 bytes (got 1)',
        ),
        (
            lambda v: validate_token(v, 2, 3, "name"),
            "\u00e9\u00e9",  # two characters, four bytes
            'name: invalid length of "\u00e9\u00e9": expected 2 <= length <= 3 bytes (got 4)',
        ),
        (
            lambda v: validate_token(v, 1, 64, "name"),
            "a=b",
            f'name: invalid character "=" at index 1 of "a=b" {TOKEN_HELP}',
        ),
        (
            lambda v: validate_path_chars(v, 0, 64, "value"),
            "a#b",
            f'value: invalid character "#" at index 1 of "a#b" {PATH_HELP}',
        ),
        (
            lambda v: validate_path_chars(v, 0, 64, "value"),
            "a\nb",
            f'value: invalid character "\\n" at index 1 of "a\\nb" {PATH_HELP}',
        ),
    ],
)
def test_character_class_errors(check: Callable[[str], None], value: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        check(value)
    assert str(info.value) == message


def test_meta_split_and_strip() -> None:
    assert split_meta("a/journal;suffix") == ("a/journal", "suffix")
    assert split_meta("a/journal") == ("a/journal", "")
    assert strip_meta("a/journal;suffix") == "a/journal"
    assert strip_meta("a/journal") == "a/journal"


@pytest.mark.parametrize("name", ["abcd", "a/b/c", "x.y/z=1/%20", "a/..b/c."])
def test_validate_journal_name_accepts(name: str) -> None:
    validate_journal_name(name)


def test_validate_journal_name_meta() -> None:
    validate_journal_name("a/journal;reader-1", allow_meta=True)
    with pytest.raises(ValidationError) as info:
        validate_journal_name("a/journal;reader-1", "name")
    assert str(info.value) == 'name: "a/journal;reader-1" must not carry a ";meta" suffix here'
    with pytest.raises(ValidationError) as info:
        validate_journal_name("a/journal;", allow_meta=True)
    assert str(info.value) == (
        'journal: invalid length of "": expected 1 <= length <= 512 bytes (got 0)'
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("abc", 'invalid length of "abc": expected 4 <= length <= 512 bytes (got 3)'),
        (
            "a" * 513,
            f'invalid length of "{"a" * 100}"... (513 bytes): expected 4 <= length <= 512 '
            "bytes (got 513)",
        ),
        ("/abc", '"/abc" must not begin with "/"'),
        ("abc/", f'"abc/" must be a clean path {CLEAN_HELP}'),
        ("a//bc", f'"a//bc" must be a clean path {CLEAN_HELP}'),
        ("a/./bc", f'"a/./bc" must be a clean path {CLEAN_HELP}'),
        ("a/../bc", f'"a/../bc" must be a clean path {CLEAN_HELP}'),
        ("../abc", f'"../abc" must be a clean path {CLEAN_HELP}'),
        ("a bcd", f'invalid character " " at index 1 of "a bcd" {PATH_HELP}'),
    ],
)
def test_validate_journal_name_rejects(name: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_journal_name(name)
    assert str(info.value) == f"journal: {reason}"


@pytest.mark.parametrize(
    "url",
    [
        "s3://bucket/",
        "s3://bucket/a/prefix/?profile=minio&endpoint=http%3A%2F%2Fminio%3A9000",
        "gs://bucket/prefix/",
        "azure://container/prefix/",
        "azure-ad://tenant/account/container/",
        "file:///",
        "file:///a/b/",
    ],
)
def test_validate_store_url_accepts(url: str) -> None:
    validate_store_url(url)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("bucket/prefix/", '"bucket/prefix/" is not an absolute URL'),
        (
            "http://host/a/",
            'invalid scheme "http" of "http://host/a/" (expected one of s3, gs, azure, '
            "azure-ad, file)",
        ),
        ("file://host/a/", 'file store URL "file://host/a/" must not have a host'),
        (
            "s3:///a/",
            'store URL "s3:///a/" is missing a host (bucket, container or tenant)',
        ),
        ("gs://bucket/prefix", 'path of store URL "gs://bucket/prefix" must end in "/"'),
        ("s3://bucket", 'path of store URL "s3://bucket" must end in "/"'),
        (
            "azure-ad://tenant/account/",
            'azure-ad store URL "azure-ad://tenant/account/" must name an account and a '
            "container (azure-ad://<tenant>/<account>/<container>/)",
        ),
        ("file:///../../somewhere/",
         'path of store URL "file:///../../somewhere/" must not have ".." segments'),
        ("file:///a/../../b/", 'path of store URL "file:///a/../../b/" must not have ".." '
                               "segments"),
        ("file:///a/%2E%2e/", 'path of store URL "file:///a/%2E%2e/" must not have ".." '
                              "segments"),
        ("s3://bucket/../", 'path of store URL "s3://bucket/../" must not have ".." segments'),
        (
            "s3://bucket:port/",
            '"s3://bucket:port/" is not a valid URL (Port could not be cast to integer '
            "value as 'port')",
        ),
    ],
)
def test_validate_store_url_rejects(url: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_store_url(url, "fragment.stores[0]")
    assert str(info.value) == f"fragment.stores[0]: {reason}"


def test_validate_endpoint() -> None:
    validate_endpoint("http://broker-1:8080", "endpoint")
    validate_endpoint("unix://localhost/tmp/broker.sock", "endpoint")
    with pytest.raises(ValidationError) as info:
        validate_endpoint("broker-1:8080/x", "endpoint")
    assert str(info.value) == 'endpoint: "broker-1:8080/x" is missing a host'
    with pytest.raises(ValidationError) as info:
        validate_endpoint("/just/a/path", "endpoint")
    assert str(info.value) == 'endpoint: "/just/a/path" is not an absolute URL'
