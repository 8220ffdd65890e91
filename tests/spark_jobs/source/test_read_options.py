"""The options of a read, checked without Spark: names as the docs spell them, a guess at a
misspelt one, each option only where its kind of read takes it, the selector and file root
in Spark's words, and `load("journal/name")`."""

from __future__ import annotations

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from gazette_core.message.framing import PROTOBUF_FIXED
from spark_jobs.selection import SPARK, check_file_root
from spark_jobs.source.frame_plan import shared_kind
from spark_jobs.source.options import read_options

SEL = {"selector": "topic=clicks"}


def refusal(options: dict[str, str], streaming: bool | None) -> str:
    with pytest.raises(ValidationError) as failed:
        read_options(options, streaming=streaming)
    return str(failed.value)


@pytest.mark.parametrize("streaming", [None, False, True])
def test_a_misspelt_option_is_named_as_typed_with_the_one_meant(streaming: bool | None) -> None:
    # Spark hands the names over lower-cased.
    line = refusal({**SEL, "startingoffset": "earliest"}, streaming)

    assert line.startswith("option startingOffset: unknown option; did you mean "
                           "startingOffsets? ("), line
    assert "startingoffset" not in line


def test_a_known_option_in_any_case_is_taken_and_named_as_documented() -> None:
    assert read_options({**SEL, "SPLITBYTES": "5"}, streaming=False).split_bytes == 5
    assert refusal({**SEL, "splitbytes": "x"}, False) == (
        "option splitBytes: 'x' is not a whole number")


def test_each_option_is_refused_only_by_the_read_that_does_not_take_it() -> None:
    assert read_options({**SEL, "failondataloss": "false"},
                        streaming=False).fail_on_data_loss is False
    assert refusal({**SEL, "maxbytespertrigger": "5"}, False) == (
        "option maxBytesPerTrigger: only streaming reads take it, not a batch read")
    assert refusal({**SEL, "endingoffsets": "latest"}, True) == (
        "option endingOffsets: only batch reads take it, not a streaming read")
    # Before Spark says which read it is, the listing says which read takes what.
    line = refusal({**SEL, "colour": "red"}, None)
    assert "batch reads only: since, unpersisted, endingOffsets" in line
    assert "streaming reads only: maxBytesPerTrigger" in line
    batch = refusal({**SEL, "colour": "red"}, False)
    assert "failOnDataLoss" in batch and "maxBytesPerTrigger" not in batch


@pytest.mark.parametrize("value", ["0", "-5"])
def test_max_bytes_per_trigger_must_be_positive(value: str) -> None:
    assert refusal({**SEL, "maxbytespertrigger": value}, True) == (
        f"option maxBytesPerTrigger: {value!r} is not a positive whole number of bytes; "
        "leave the option out for no limit")
    assert read_options(SEL, streaming=True).max_bytes_per_trigger == 0  # Not given: no limit.


def test_a_load_path_without_selector_syntax_is_a_journal_name() -> None:
    def selector(path: str) -> str:
        return read_options({"path": path}, streaming=False).selector

    assert selector("acme/clicks") == "name=acme/clicks"
    assert selector("topic=clicks") == "topic=clicks"
    assert selector("name in (a/b, c/d)") == "name in (a/b, c/d)"
    assert selector("!suspended") == "!suspended"
    assert read_options({"path": "a/b", "selector": "x=y"}, streaming=True).selector == "x=y"


def test_the_sources_refusals_speak_of_options_not_gazctl_flags() -> None:
    proto = pb.JournalSpec(name="a/p", labels=pb.LabelSet(
        labels=[pb.Label(name="content-type", value=PROTOBUF_FIXED)]))
    with pytest.raises(ValidationError) as kind:
        shared_kind([proto], SPARK)
    with pytest.raises(ValidationError) as root:
        check_file_root([pb.Fragment(journal="a/j", backing_store="file:///")], None, False,
                        SPARK)

    assert str(kind.value).startswith("option selector: journal a/p holds protobuf messages")
    assert str(root.value).startswith("option fileRoot: journal a/j keeps fragments in ")
    assert "--selector" not in str(kind.value) and "--file-root" not in str(root.value)
