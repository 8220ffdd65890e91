"""S3 fixtures: one moto server per module on loopback, a fresh bucket per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gazette_core.testing.s3 import S3Server, moto_server, new_bucket


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3(moto_endpoint: str) -> S3Server:
    """A new bucket on the module's moto server; its store URL has prefix `fragments/`."""
    return new_bucket(moto_endpoint)
