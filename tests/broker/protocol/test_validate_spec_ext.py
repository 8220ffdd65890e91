"""JournalSpec, ProcessSpec, BrokerSpec, Route and Header validation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set
from gazette_core.broker.protocol.validate_ext import (
    validate_broker_spec,
    validate_header,
    validate_journal_spec,
    validate_media_type,
    validate_route,
)
from gazette_core.errors import ValidationError

CLEAN_HELP = '(no "//", no "." or ".." segments, no trailing "/")'


def journal_spec() -> pb.JournalSpec:
    return pb.JournalSpec(
        name="examples/journal",
        replication=3,
        labels=label_set(
            ("app.gazette.dev/message-type", "Doc"),
            ("content-type", "application/x-ndjson"),
            ("app.gazette.dev/tag", "a"),
            ("app.gazette.dev/tag", "b"),
        ),
        fragment=pb.JournalSpec.Fragment(
            length=1 << 28,
            compression_codec=pb.SNAPPY,
            stores=["s3://bucket/prefix/", "file:///backup/"],
            refresh_interval=Duration(seconds=300),
            retention=Duration(seconds=720 * 3600),
            flush_interval=Duration(seconds=3600),
            path_postfix_template='date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}',
        ),
        flags=pb.JournalSpec.O_RDWR,
        max_append_rate=1 << 20,
        suspend=pb.JournalSpec.Suspend(level=pb.JournalSpec.Suspend.PARTIAL, offset=1024),
    )


def test_valid_journal_spec() -> None:
    validate_journal_spec(journal_spec())
    minimal = journal_spec()
    minimal.ClearField("suspend")
    minimal.ClearField("labels")
    minimal.fragment.ClearField("stores")
    minimal.fragment.ClearField("flush_interval")
    minimal.fragment.path_postfix_template = ""
    minimal.flags = 0
    validate_journal_spec(minimal)


def _labels(*pairs: tuple[str, str]) -> Callable[[pb.JournalSpec], None]:
    def apply(spec: pb.JournalSpec) -> None:
        spec.labels.CopyFrom(label_set(*pairs))

    return apply


def _set(path: str, value: object) -> Callable[[pb.JournalSpec], None]:
    def apply(spec: pb.JournalSpec) -> None:
        *parents, leaf = path.split(".")
        target: Any = spec
        for parent in parents:
            target = getattr(target, parent)
        if isinstance(value, Duration):
            getattr(target, leaf).CopyFrom(value)
        elif isinstance(value, list):
            target.ClearField(leaf)
            getattr(target, leaf).extend(value)
        else:
            setattr(target, leaf, value)

    return apply


SPEC_ERRORS = [
    (_set("name", "ab"), 'name: invalid length of "ab": expected 4 <= length <= 512 bytes (got 2)'),
    (_set("name", "a/journal/"), f'name: "a/journal/" must be a clean path {CLEAN_HELP}'),
    (_set("name", "/a/journal"), 'name: "/a/journal" must not begin with "/"'),
    (
        _set("name", "a/journal;meta"),
        'name: "a/journal;meta" must not carry a ";meta" suffix here',
    ),
    (_set("replication", 0), "replication: expected 1 <= replication <= 5 (got 0)"),
    (_set("replication", 6), "replication: expected 1 <= replication <= 5 (got 6)"),
    (_labels(("name", "x")), 'labels.labels[0].name: label name "name" is reserved'),
    (_labels(("prefix", "a/")), 'labels.labels[0].name: label name "prefix" is reserved'),
    (
        _labels(("content-type", "text/csv"), ("content-type", "text/plain")),
        'labels.labels[1]: label "content-type" may have only one value',
    ),
    (
        _labels(("app.gazette.dev/region", "a"), ("app.gazette.dev/region", "b")),
        'labels.labels[1]: label "app.gazette.dev/region" may have only one value',
    ),
    (
        _labels(("content-type", "text")),
        None,  # A bare media type parses, as in Go.
    ),
    (
        _labels(("content-type", "text/")),
        'labels.labels[0].value: "text/" is not a valid MIME media type (expected type/subtype)',
    ),
    (
        _labels(("content-type", "a/b/c")),
        'labels.labels[0].value: "a/b/c" is not a valid MIME media type (expected type/subtype)',
    ),
    (
        _labels(("app.gazette.dev/message-type", "Doc")),
        'labels.labels[0]: label "app.gazette.dev/message-type" requires a "content-type" label',
    ),
    (
        _labels(("app.gazette.dev/message-subtype", "V1"), ("content-type", "text/csv")),
        'labels.labels[0]: label "app.gazette.dev/message-subtype" requires a '
        '"app.gazette.dev/message-type" label',
    ),
    (
        _labels(("aa", ""), ("aa", "1")),
        'labels.labels[1]: label "aa" has both empty and non-empty values',
    ),
    (
        _set("fragment.length", 12),
        "fragment.length: expected 1024 <= length <= 17179869184 (got 12)",
    ),
    (
        _set("fragment.length", (1 << 34) + 1),
        "fragment.length: expected 1024 <= length <= 17179869184 (got 17179869185)",
    ),
    (
        _set("fragment.compression_codec", pb.INVALID),
        "fragment.compression_codec: invalid compression codec 0",
    ),
    (
        _set("fragment.stores", ["s3://bucket/prefix/", "s3://bucket/other"]),
        'fragment.stores[1]: path of store URL "s3://bucket/other" must end in "/"',
    ),
    (
        _set("fragment.stores", ["ftp://host/a/"]),
        'fragment.stores[0]: invalid scheme "ftp" of "ftp://host/a/" '
        "(expected one of s3, gs, azure, azure-ad, file)",
    ),
    (
        _set("fragment.compression_codec", pb.GZIP_OFFLOAD_DECOMPRESSION),
        None,  # The first store is s3://, so offloading is fine.
    ),
    (
        lambda s: (
            _set("fragment.compression_codec", pb.GZIP_OFFLOAD_DECOMPRESSION)(s),
            _set("fragment.stores", ["file:///root/", "s3://bucket/"])(s),
        ),
        "fragment.compression_codec: GZIP_OFFLOAD_DECOMPRESSION cannot be used with the file "
        'store "file:///root/" (stores[0])',
    ),
    (
        _set("fragment.refresh_interval", Duration(nanos=500_000_000)),
        "fragment.refresh_interval: expected 1s <= refresh_interval <= 24h0m0s (got 500ms)",
    ),
    (
        _set("fragment.refresh_interval", Duration(seconds=86401)),
        "fragment.refresh_interval: expected 1s <= refresh_interval <= 24h0m0s (got 24h0m1s)",
    ),
    (_set("fragment.retention", Duration()), None),
    (
        _set("fragment.flush_interval", Duration(seconds=30)),
        "fragment.flush_interval: expected flush_interval == 0s or flush_interval >= 1m0s "
        "(got 30s)",
    ),
    (
        _set("fragment.path_postfix_template", "date={{ .Spool"),
        'fragment.path_postfix_template: unclosed "{{" at index 5 of "date={{ .Spool"',
    ),
    (
        _set("fragment.path_postfix_template", "a}}b"),
        'fragment.path_postfix_template: unexpected "}}" at index 1 of "a}}b"',
    ),
    (
        _set("fragment.path_postfix_template", "x={{ }}"),
        'fragment.path_postfix_template: empty action at index 2 of "x={{ }}"',
    ),
    (
        _set("fragment.path_postfix_template", "{{ .__class__ }}"),
        "fragment.path_postfix_template: unsupported action {{ .__class__ }} in "
        "'{{ .__class__ }}': only field chains like .Spool.FirstAppendTime.Format",
    ),
    (
        _set("fragment.path_postfix_template", "{{ range .Spool }}x{{ end }}"),
        "fragment.path_postfix_template: unsupported action {{ range .Spool }} in "
        "'{{ range .Spool }}x{{ end }}': only field chains like .Spool.FirstAppendTime.Format",
    ),
    (
        _set("fragment.path_postfix_template", "{{ .Spool.Nope }}"),
        "fragment.path_postfix_template: {{ .Spool.Nope }}: can't evaluate field Nope",
    ),
    (
        _set("fragment.path_postfix_template", "../{{ .JournalSpec.Name }}"),
        "fragment.path_postfix_template: the postfix it gives for a sample spool is invalid: "
        '"../examples/journal" must be a clean path (no "//", no "." or ".." segments, no '
        'trailing "/")',
    ),
    (
        _set("fragment.path_postfix_template",
             'date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}/{{ .JournalSpec.Name }}'),
        None,
    ),
    (_set("flags", 3), "flags: expected flags to be one of 0, 1, 2 or 4 (got 3)"),
    (_set("flags", 8), "flags: expected flags to be one of 0, 1, 2 or 4 (got 8)"),
    (_set("max_append_rate", -1), "max_append_rate: expected max_append_rate >= 0 (got -1)"),
    (
        _set("suspend.level", 3),
        "suspend.level: expected level NONE (0), PARTIAL (1) or FULL (2) (got 3)",
    ),
    (_set("suspend.offset", -1), "suspend.offset: expected offset >= 0 (got -1)"),
]


@pytest.mark.parametrize(("mutate", "message"), SPEC_ERRORS)
def test_journal_spec_rules(
    mutate: Callable[[pb.JournalSpec], object], message: str | None
) -> None:
    spec = journal_spec()
    mutate(spec)
    if message is None:
        validate_journal_spec(spec)
        return
    with pytest.raises(ValidationError) as info:
        validate_journal_spec(spec)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "value",
    ["text/csv", "application/x-ndjson", "text/plain; charset=utf-8", 'a/b; x="y z";', "text"],
)
def test_validate_media_type_accepts(value: str) -> None:
    validate_media_type(value, "value")


def test_validate_media_type_rejects_bad_and_duplicate_parameters() -> None:
    with pytest.raises(ValidationError) as info:
        validate_media_type("text/plain; a=1; A=2", "value")
    assert str(info.value) == (
        'value: "text/plain; a=1; A=2" is not a valid MIME media type (invalid parameter "A=2")'
    )
    with pytest.raises(ValidationError) as info:
        validate_media_type("text/plain; junk", "value")
    assert str(info.value) == (
        'value: "text/plain; junk" is not a valid MIME media type (invalid parameter "junk")'
    )


ZONE_HELP = "(allowed: letters, numbers and -_+/.)"
A = pb.ProcessSpec.ID(zone="east", suffix="broker-a")
B = pb.ProcessSpec.ID(zone="west", suffix="broker-b")


def header() -> pb.Header:
    return pb.Header(
        process_id=A,
        route=pb.Route(members=[A, B], primary=0, endpoints=["http://a:8080", ""]),
        etcd=pb.Header.Etcd(cluster_id=1, member_id=2, revision=3, raft_term=4),
    )


def test_valid_headers() -> None:
    validate_header(header())
    unrouted = pb.Header(
        route=pb.Route(primary=-1),
        etcd=pb.Header.Etcd(cluster_id=1, member_id=2, revision=3, raft_term=4),
    )
    validate_header(unrouted)


HEADER_ERRORS = [
    (
        lambda h: h.process_id.CopyFrom(pb.ProcessSpec.ID(zone="east", suffix="abc")),
        'process_id.suffix: invalid length of "abc": expected 4 <= length <= 128 bytes (got 3)',
    ),
    (
        lambda h: h.process_id.CopyFrom(pb.ProcessSpec.ID(zone="", suffix="abcd")),
        'process_id.zone: invalid length of "": expected 1 <= length <= 32 bytes (got 0)',
    ),
    (
        lambda h: h.route.members[1].CopyFrom(pb.ProcessSpec.ID(zone="a#b", suffix="broker")),
        f'route.members[1].zone: invalid character "#" at index 1 of "a#b" {ZONE_HELP}',
    ),
    (
        lambda h: h.route.members.reverse(),
        'route.members[1]: members must be unique and sorted by (zone, suffix): "west#broker-b" '
        'is not before "east#broker-a"',
    ),
    (
        lambda h: h.route.members[1].CopyFrom(A),
        'route.members[1]: members must be unique and sorted by (zone, suffix): "east#broker-a" '
        'is not before "east#broker-a"',
    ),
    (
        lambda h: setattr(h.route, "primary", 2),
        "route.primary: expected -1 <= primary < 2 (got 2)",
    ),
    (
        lambda h: setattr(h.route, "primary", -2),
        "route.primary: expected -1 <= primary < 2 (got -2)",
    ),
    (
        lambda h: h.route.endpoints.pop(),
        "route.endpoints: expected no endpoints or one per member (2) (got 1)",
    ),
    (
        lambda h: h.route.endpoints.__setitem__(1, "b:8080"),
        'route.endpoints[1]: "b:8080" is missing a host',
    ),
    (
        lambda h: setattr(h.etcd, "cluster_id", 0),
        "etcd.cluster_id: expected cluster_id != 0 (got 0)",
    ),
    (lambda h: setattr(h.etcd, "member_id", 0), "etcd.member_id: expected member_id != 0 (got 0)"),
    (lambda h: setattr(h.etcd, "raft_term", 0), "etcd.raft_term: expected raft_term != 0 (got 0)"),
    (lambda h: setattr(h.etcd, "revision", 0), "etcd.revision: expected revision > 0 (got 0)"),
]


@pytest.mark.parametrize(("mutate", "message"), HEADER_ERRORS)
def test_header_rules(mutate: Callable[[pb.Header], object], message: str) -> None:
    h = header()
    mutate(h)
    with pytest.raises(ValidationError) as info:
        validate_header(h)
    assert str(info.value) == message


def test_route_without_members() -> None:
    validate_route(pb.Route(primary=-1))
    with pytest.raises(ValidationError) as info:
        validate_route(pb.Route(primary=0))
    assert str(info.value) == "primary: expected -1 <= primary < 0 (got 0)"


def broker_spec() -> pb.BrokerSpec:
    return pb.BrokerSpec(
        process_spec=pb.ProcessSpec(id=A, endpoint="http://broker-a:8080"), journal_limit=1024
    )


def test_broker_spec_rules() -> None:
    validate_broker_spec(broker_spec())
    spec = broker_spec()
    spec.journal_limit = (1 << 17) + 1
    with pytest.raises(ValidationError) as info:
        validate_broker_spec(spec)
    assert str(info.value) == "journal_limit: expected journal_limit <= 131072 (got 131073)"
    spec = broker_spec()
    spec.process_spec.endpoint = "broker-a"
    with pytest.raises(ValidationError) as info:
        validate_broker_spec(spec)
    assert str(info.value) == 'process_spec.endpoint: "broker-a" is not an absolute URL'
    spec = broker_spec()
    spec.process_spec.id.suffix = "b"
    with pytest.raises(ValidationError) as info:
        validate_broker_spec(spec)
    assert str(info.value) == (
        'process_spec.id.suffix: invalid length of "b": expected 4 <= length <= 128 bytes (got 1)'
    )
