"""Which hints `gazctl shards recover` plays from: --hints, and the default order."""

from __future__ import annotations

import pytest

from gazctl.commands.shards_recover import NoHintsError, check_slot, choose_hints
from gazctl.usage import UsageError
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb

SPEC = cpb.ShardSpec(id="s", recovery_log_prefix="logs", hint_backups=2)
Entry = cpb.GetHintsResponse.ResponseHints


def hints(fnode: int) -> rpb.FSMHints:
    return rpb.FSMHints(log="logs/s", live_nodes=[rpb.FnodeSegments(fnode=fnode)])


def response(primary: int | None, *backups: int | None) -> cpb.GetHintsResponse:
    def entry(fnode: int | None) -> cpb.GetHintsResponse.ResponseHints:
        return Entry(hints=hints(fnode)) if fnode is not None else Entry()

    return cpb.GetHintsResponse(primary_hints=entry(primary),
                                backup_hints=[entry(b) for b in backups])


@pytest.mark.parametrize(("resp", "slot", "fnode"), [
    (response(9, 5, 3), "primary", 9),
    (response(None, 5, 3), "backup.0", 5),
    (response(None, None, 3), "backup.1", 3),
])
def test_default_is_primary_then_the_newest_backup(resp: cpb.GetHintsResponse, slot: str,
                                                   fnode: int) -> None:
    assert choose_hints(SPEC, resp, "") == (slot, hints(fnode))


def test_without_any_hints_the_whole_log_is_played() -> None:
    assert choose_hints(SPEC, response(None, None, None), "") == (
        "none (the whole log)", rpb.FSMHints(log="logs/s"))


def test_a_chosen_slot_is_played_even_when_newer_ones_exist() -> None:
    assert choose_hints(SPEC, response(9, 5, 3), "backup.1") == ("backup.1", hints(3))


def test_an_empty_chosen_slot_is_an_error() -> None:
    with pytest.raises(NoHintsError, match=r"shard s has no backup\.0 hints"):
        choose_hints(SPEC, response(9, None, 3), "backup.0")


def test_a_slot_beyond_the_backups_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"keeps 2 backup hints \(backup\.0 to backup\.1\)"):
        choose_hints(SPEC, response(9, 5, 3), "backup.2")


@pytest.mark.parametrize("text", ["backup", "backup.-1", "Primary", "backup.0.1", "2"])
def test_hints_flag_must_be_primary_or_backup_n(text: str) -> None:
    with pytest.raises(UsageError, match=r"expected primary or backup\.N"):
        check_slot(text)
