"""The shard set YAML: push-down from `common`, hoisting into it, and exact round trips."""

from __future__ import annotations

import pytest

from gazette_core.broker.protocol.durations_ext import from_seconds
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.shardspace import dump_set, hoist, load_set, push_down, to_apply_request
from gazette_core.errors import ValidationError

SET = """\
common:
  recovery_log_prefix: acme/recovery-logs
  hint_prefix: /acme/hints
  hint_backups: 2
  max_txn_duration: 1s
  hot_standbys: 1
  labels:
  - name: store
    value: sqlite
shards:
- id: clicks-000
  sources:
  - journal: acme/clicks/part-000
  revision: 41
- id: clicks-001
  sources:
  - journal: acme/clicks/part-001
    min_offset: 1024
  labels:
  - name: store
    value: json
  delete: true
  revision: 41
- id: clicks-002
  sources:
  - journal: acme/clicks/part-002
  hot_standbys: 3
  comment: busiest partition
"""


def spec(shard: str, source: str, **fields: object) -> cpb.ShardSpec:
    out = cpb.ShardSpec(id=shard, sources=[cpb.ShardSpec.Source(journal=source)],
                        recovery_log_prefix="acme/recovery-logs", hint_prefix="/acme/hints",
                        hint_backups=2, hot_standbys=1)
    out.max_txn_duration.CopyFrom(from_seconds(1))
    out.labels.labels.add(name="store", value="sqlite")
    for name, value in fields.items():
        setattr(out, name, value)
    return out


def test_push_down_gives_each_shard_the_common_values_it_leaves_unset() -> None:
    leaves = push_down(load_set(SET))
    assert leaves[0].spec == spec("clicks-000", "acme/clicks/part-000")
    assert (leaves[0].delete, leaves[0].revision) == (False, 41)
    one = leaves[1].spec
    assert [(s.journal, s.min_offset) for s in one.sources] == [("acme/clicks/part-001", 1024)]
    # A label the shard names replaces the common values of that name.
    assert [(lb.name, lb.value) for lb in one.labels.labels] == [("store", "json")]
    assert leaves[2].spec == spec("clicks-002", "acme/clicks/part-002", hot_standbys=3)


def test_apply_request_upserts_and_deletes_with_their_revisions() -> None:
    changes = to_apply_request(push_down(load_set(SET))).changes
    assert [(c.expect_mod_revision, c.HasField("upsert"), c.delete) for c in changes] == [
        (41, True, ""), (41, False, "clicks-001"), (0, True, "")]


def test_hoisting_a_listing_moves_shared_values_to_common_and_dumps_byte_identical() -> None:
    listed = [(spec(f"clicks-00{i}", f"acme/clicks/part-00{i}"), 7 + i) for i in range(3)]
    listed[2][0].hot_standbys = 3
    text = dump_set(hoist(listed))
    assert text.startswith("common:\n  recovery_log_prefix: acme/recovery-logs\n")
    common, shards = text.split("shards:\n")
    assert "hot_standbys" not in common  # not shared by all, so kept per shard
    assert shards.count("  hot_standbys: 1\n") == 2
    assert "- id: clicks-002\n  sources:\n  - journal: acme/clicks/part-002\n" \
           "  hot_standbys: 3\n  revision: 9\n" in text
    again = load_set(text)
    assert dump_set(again) == text
    assert [(leaf.spec, leaf.revision) for leaf in push_down(again)] == listed


def test_identical_sources_are_hoisted_too() -> None:
    listed = [(spec("a-000", "acme/all"), 3), (spec("a-001", "acme/all"), 4)]
    shard_set = hoist(listed)
    assert [s.journal for s in shard_set.common.sources] == ["acme/all"]
    assert all(not entry.spec.sources for entry in shard_set.shards)
    assert [leaf.spec for leaf in push_down(load_set(dump_set(shard_set)))] == [
        s for s, _ in listed]


def test_comments_deletes_and_revisions_round_trip() -> None:
    once = dump_set(load_set(SET))
    assert once == SET


def test_a_single_shard_hoists_nothing() -> None:
    text = dump_set(hoist([(spec("solo-000", "acme/solo"), 5)]))
    assert text.startswith("shards:\n- id: solo-000\n")


@pytest.mark.parametrize(("text", "path", "reason"), [
    ("common: {id: x}\n", "common", "unknown key \"id\""),
    ("common: {delete: true}\n", "common", "unknown key \"delete\""),
    ("shards:\n- id: abcd\n  hot_standbys: many\n", "shards[0].hot_standbys",
     "expected an integer"),
    ("shards:\n- id: abcd\n  max_txn_duration: 5\n", "shards[0].max_txn_duration",
     "expected a Go duration"),
    ("shards:\n- id: abcd\n  sources: [{journal: a, offset: 1}]\n", "shards[0].sources[0]",
     "unknown key \"offset\""),
    ("shards: [{id: abcd}]\nextra: 1\n", "", "unknown key \"extra\""),
])
def test_decoding_is_strict_and_names_the_field(text: str, path: str, reason: str) -> None:
    with pytest.raises(ValidationError) as err:
        load_set(text)
    assert err.value.path == path and reason in err.value.reason, err.value


def test_push_down_validates_each_shard_with_its_place() -> None:
    text = "common: {max_txn_duration: 1s}\nshards:\n- id: ok-000\n- id: ab\n"
    with pytest.raises(ValidationError) as err:
        to_apply_request(push_down(load_set(text)))
    assert err.value.path.startswith("shards[1]"), err.value
    with pytest.raises(ValidationError, match="appears twice"):
        push_down(load_set("shards:\n- id: abcd\n- id: abcd\n"))
    with pytest.raises(ValidationError, match="revision > 0 or -1"):
        to_apply_request(push_down(load_set("shards:\n- id: abcd\n  delete: true\n")))
