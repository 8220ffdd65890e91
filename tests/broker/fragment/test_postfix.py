"""path_postfix_template: the Go text/template subset, Go time layouts, and a persisted
fragment landing under its Hive-style postfix."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.fragment.postfix import evaluate, go_format, parse
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

HIVE = ('date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}/'
        'hour={{ .Spool.FirstAppendTime.Format "15" }}')
# 2019-11-19 22:04:05.5 UTC, a Tuesday.
FIRST_APPEND = calendar.timegm((2019, 11, 19, 22, 4, 5)) + 0.5
T = datetime.fromtimestamp(FIRST_APPEND, UTC)


def _spool(tmp_path: Path, content: bytes = b"x" * 100, codec: int = pb.NONE) -> Spool:
    spool = Spool("logs/clicks", str(tmp_path))
    spool.apply(pb.ReplicateRequest(proposal=spool.roll_proposal(0, codec)))
    spool.apply(pb.ReplicateRequest(content=content, content_delta=0))
    spool.apply(pb.ReplicateRequest(proposal=spool.proposal_with_delta(),
                                    registers=pb.LabelSet(labels=[
                                        pb.Label(name="owner", value="ops")])))
    spool.first_append_time = FIRST_APPEND
    return spool


def _spec(template: str = HIVE) -> pb.JournalSpec:
    spec = pb.JournalSpec(name="logs/clicks", replication=3,
                          labels=pb.LabelSet(labels=[pb.Label(name="topic", value="clicks")]))
    spec.fragment.path_postfix_template = template
    spec.fragment.length = 1024
    spec.fragment.compression_codec = pb.GZIP
    return spec


def test_the_hive_template_gives_date_and_hour(tmp_path: Path) -> None:
    assert evaluate(HIVE, _spool(tmp_path), _spec()) == "date=2019-11-19/hour=22"


def test_an_empty_template_is_no_postfix(tmp_path: Path) -> None:
    assert evaluate("", _spool(tmp_path), _spec("")) == ""


@pytest.mark.parametrize(("template", "expected"), [
    ("{{ .Spool.Journal }}/{{ .Spool.Begin }}-{{ .Spool.End }}", "logs/clicks/0-100"),
    ("{{ .Spool.Fragment.Journal }}", "logs/clicks"),
    ("{{ .Spool.CompressionCodec }}", "NONE"),
    ("{{ .JournalSpec.Name }}/r{{ .JournalSpec.Replication }}", "logs/clicks/r3"),
    ("{{ .JournalSpec.Fragment.Length }}-{{ .JournalSpec.Fragment.CompressionCodec }}",
     "1024-GZIP"),
    ('topic={{ .JournalSpec.LabelSet.ValueOf "topic" }}', "topic=clicks"),
    ('topic={{ .JournalSpec.ValueOf "topic" }}{{ .JournalSpec.ValueOf "none" }}',
     "topic=clicks"),
    ('owner={{ .Spool.Registers.ValueOf "owner" }}', "owner=ops"),
    ("y={{ .Spool.FirstAppendTime.Year }}/m={{ .Spool.FirstAppendTime.Month }}"
     "/d={{ .Spool.FirstAppendTime.Day }}/doy={{ .Spool.FirstAppendTime.YearDay }}",
     "y=2019/m=November/d=19/doy=323"),
    ("{{ .Spool.FirstAppendTime.Unix }}", "1574201045"),
    ('{{ .Spool.FirstAppendTime.UTC.Format "15:04" }}', "22:04"),
    ("{{ .Spool.FirstAppendTime }}", "2019-11-19 22:04:05.5 +0000 UTC"),
    ("a/ {{- /* a comment */ -}} /b", "a//b"),
    ("a  {{- .Spool.Begin -}}  b", "a0b"),
    ("{{ .Spool.Begin -}}\n/x", "0/x"),
    ("no actions at all", "no actions at all"),
    ("{{ .Spool.FirstAppendTime.Format `2006/01` }}", "2019/11"),
])
def test_supported_actions(tmp_path: Path, template: str, expected: str) -> None:
    assert evaluate(template, _spool(tmp_path), _spec(template)) == expected


@pytest.mark.parametrize(("layout", "expected"), [
    ("2006-01-02", "2019-11-19"),
    ("06/1/2 3:4:5 PM", "19/11/19 10:4:5 PM"),
    ("Jan January Mon Monday", "Nov November Tue Tuesday"),
    ("_2|__2|002", "19|323|323"),
    ("15h04m05s", "22h04m05s"),
    ("03pm MST", "10pm UTC"),
    ("2006-01-02T15:04:05Z07:00", "2019-11-19T22:04:05Z"),
    ("-0700 -07:00 -07", "+0000 +00:00 +00"),
    ("05.000 05.999 05,000000", "05.500 05.5 05,500000"),
    ("hour=15", "hour=22"),
])
def test_go_time_layouts(layout: str, expected: str) -> None:
    assert go_format(T, layout) == expected


def test_whole_seconds_drop_a_nines_fraction() -> None:
    assert go_format(T.replace(microsecond=0), "05.999|05.000") == "05|05.000"


@pytest.mark.parametrize(("template", "message"), [
    ('{{ printf "%d" .Spool.Begin }}',
     "path_postfix_template: unsupported action {{ printf \"%d\" .Spool.Begin }} in "
     "'{{ printf \"%d\" .Spool.Begin }}': only field chains like "
     ".Spool.FirstAppendTime.Format"),
    ("{{ .Spool.Begin | print }}",
     "path_postfix_template: unsupported argument '| print' in {{ .Spool.Begin | print }} "
     "of '{{ .Spool.Begin | print }}'"),
    ("{{ .Spool.Nope }}", "path_postfix_template: {{ .Spool.Nope }}: can't evaluate field Nope"),
    ('{{ .Spool.Begin "x" }}',
     'path_postfix_template: {{ .Spool.Begin "x" }}: Begin is a field, not a method: '
     "it takes no arguments"),
    ("{{ .Spool.FirstAppendTime.Format }}",
     "path_postfix_template: {{ .Spool.FirstAppendTime.Format }}: wrong arguments for Format: "
     "<lambda>() missing 1 required positional argument: 'layout'"),
    ("{{ .Spool.Registers }}",
     "path_postfix_template: {{ .Spool.Registers }}: cannot print a _Labels"),
    ("a {{ .Spool.Begin", "path_postfix_template: unclosed \"{{\" at index 2 of "
                          "'a {{ .Spool.Begin'"),
])
def test_templates_outside_the_subset_fail_naming_the_action(
        tmp_path: Path, template: str, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        evaluate(template, _spool(tmp_path), _spec(template))
    assert str(err.value) == message


def test_parse_caches_and_splits_text_from_actions() -> None:
    assert parse(HIVE) is parse(HIVE)
    assert [p if isinstance(p, str) else p.chain for p in parse(HIVE)] == [
        "date=", ("Spool", "FirstAppendTime", "Format"), "/hour=",
        ("Spool", "FirstAppendTime", "Format")]


async def test_a_persisted_fragment_lands_under_its_postfix(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    spool = _spool(tmp_path, b"hello\n" * 10)
    persister = Persister(str(tmp_path / "root"))
    spec = _spec()
    spec.fragment.stores.append("file:///")

    fragment = await persister.persist(spool, spec)

    assert fragment is not None
    assert fragment.path_postfix == "date=2019-11-19/hour=22"
    files = [str(p.relative_to(tmp_path / "root")) for p in (tmp_path / "root").rglob("*")
             if p.is_file()]
    assert [f.rsplit("/", 1)[0] for f in files] == ["logs/clicks/date=2019-11-19/hour=22"]
