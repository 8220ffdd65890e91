"""Selecting journals for commands that act on a selector's matches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazctl.usage import NOTHING, UsageError
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.broker.protocol.labelset_ext import MAX_NAME_LEN, MIN_NAME_LEN
from gazette_core.broker.protocol.names_ext import validate_token
from gazette_core.errors import GazetteError, ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


class NoMatchError(GazetteError):
    """A selector that must match some journal matched none (gazctl exits with 3).

    Not a ValidationError: the selector is valid, the cluster has no such journal.
    """

    exit_code = NOTHING

    @classmethod
    def of(cls, text: str, what: str = "journals") -> NoMatchError:
        """The error of selector `text` (possibly empty: all of `what`) matching none."""
        return cls(f"no {what} match {text!r}" if text.strip() else f"there are no {what}")


def selector_of(text: str) -> pb.LabelSelector:
    """The parsed `-l` selector; one that does not parse is a usage error."""
    try:
        return parse_selector(text)
    except ValidationError as exc:
        raise UsageError("--selector", exc.reason) from None


def label_columns_of(names: list[str]) -> list[str]:
    """The `-L` label names, each checked as a label name is (a bad one can match nothing)."""
    for name in names:
        try:
            validate_token(name, MIN_NAME_LEN, MAX_NAME_LEN, "")
        except ValidationError as exc:
            raise UsageError("--label-columns", f"label {name!r}: {exc.reason}") from None
    return names


def require_selector(text: str, example: str = "name=acme/clicks") -> pb.LabelSelector:
    """Parse a selector that must not be empty (commands that write or read content)."""
    if not text.strip():
        raise UsageError("--selector", f"a selector is required, e.g. -l {example}")
    return selector_of(text)


async def matched_journals(stub: JournalAsyncStub, selector: pb.LabelSelector,
                           text: str) -> list[pb.ListResponse.Journal]:
    """Journals the selector matches; an error naming the selector when there are none."""
    resp = await list_journals(stub, selector)
    if not resp.journals:
        raise NoMatchError.of(text)
    return list(resp.journals)
