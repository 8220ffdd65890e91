"""`gazctl journals apply` revision checks: dry runs refuse what the real apply would,
refusals name each journal with its expected and current revisions, and a failure
after `--max-txn-size` transactions names what they applied."""

from __future__ import annotations

import re
from pathlib import Path

from tests.gazctl.support import gazctl, isolated_env, journals, ok
from tests.gazctl.test_journals_apply import TREE

HINT = ("(`gazctl journals list -o yaml` shows current revisions; revision 0 only creates "
        "journals that do not exist yet, -1 applies at any revision)")


TXN_TREE = """\
name: rev/txn/
replication: 1
fragment:
  length: 2048
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 2s
children:
"""


def _children(*names: str) -> str:
    return "".join(f"  - name: rev/txn/{n}\n    revision: 0\n" for n in names)


def _revision(address: str, name: str) -> int:
    return journals(address, f"name={name}")[0].mod_revision


def _apply(address: str, state_home: Path, tree: str, *flags: str) -> tuple[int, str, str]:
    proc = gazctl("journals", "apply", *flags, "--broker.address", address,
                  input=tree.encode(), env=isolated_env(state_home))
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def test_dry_run_refuses_creating_a_journal_that_exists(address: str, state_home: Path) -> None:
    ok("journals", "apply", "--broker.address", address, input=TREE.format(p="rev/dry"))
    events, raw = _revision(address, "rev/dry/events"), _revision(address, "rev/dry/raw")

    code, out, err = _apply(address, state_home, TREE.format(p="rev/dry"), "--dry-run")

    assert code == 1
    assert out.splitlines()[-1] == "0 created, 2 changed, 0 unchanged, 0 deleted"
    assert err == (
        "error: dry run: the apply would be refused: journal rev/dry/events: expected "
        f"revision 0 (a new journal), but its current revision is {events}; journal "
        f"rev/dry/raw: expected revision 0 (a new journal), but its current revision is {raw} "
        f"{HINT}\n")


def test_dry_run_passes_revisions_that_match(address: str, state_home: Path) -> None:
    ok("journals", "apply", "--broker.address", address, input=TREE.format(p="rev/match"))
    revision = _revision(address, "rev/match/events")
    tree = TREE.format(p="rev/match").replace("revision: 0", f"revision: {revision}")

    code, out, err = _apply(address, state_home, tree.replace("length: 2048", "length: 8192"),
                            "--dry-run")

    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "dry run: 1 change(s) not applied"


def test_refusal_names_the_journal_and_both_revisions(address: str, state_home: Path) -> None:
    ok("journals", "apply", "--broker.address", address, input=TREE.format(p="rev/stale"))
    current = _revision(address, "rev/stale/raw")
    # events at any revision, raw at one before its current: the transaction fails whole.
    tree = (TREE.format(p="rev/stale").replace("revision: 0", "revision: -1", 1)
            .replace("revision: 0", f"revision: {current - 1}").replace("length: 2048",
                                                                        "length: 8192"))

    code, _, err = _apply(address, state_home, tree)

    assert code == 1
    assert err == (
        "error: broker refused: ETCD_TRANSACTION_FAILED: journal rev/stale/raw: expected "
        f"revision {current - 1}, but its current revision is {current}; nothing was applied "
        f"{HINT}\n")
    assert [j.spec.fragment.length for j in journals(address, "prefix=rev/stale/")] == [
        2048, 4096]


def test_failed_transaction_names_the_journals_applied_before_it(
        address: str, state_home: Path) -> None:
    ok("journals", "apply", "--broker.address", address,
       input=TXN_TREE + _children("b/events", "b/raw"))
    current = _revision(address, "rev/txn/b/raw")
    # Two changes a transaction: rev/txn/a/* are new (applied), rev/txn/b/* exist (refused).
    tree = TXN_TREE + _children("a/events", "a/raw", "b/events", "b/raw", "c")

    code, out, err = _apply(address, state_home, tree, "--max-txn-size", "2")

    assert code == 1
    assert out == ""
    match = re.fullmatch(
        r"error: broker refused: ETCD_TRANSACTION_FAILED: transaction 2 of 3 refused: "
        r"journal rev/txn/b/events: expected revision 0 \(a new journal\), but its current "
        rf"revision is (\d+); journal rev/txn/b/raw: expected revision 0 \(a new journal\), "
        rf"but its current revision is {current}; applied in 1 earlier transaction, at "
        r"revision (\d+): rev/txn/a/events, rev/txn/a/raw; not applied: rev/txn/b/events, "
        rf"rev/txn/b/raw, rev/txn/c {re.escape(HINT)}\n", err)
    assert match, err
    assert int(match.group(2)) == _revision(address, "rev/txn/a/raw")
    assert [j.spec.name for j in journals(address, "prefix=rev/txn/")] == [
        "rev/txn/a/events", "rev/txn/a/raw", "rev/txn/b/events", "rev/txn/b/raw"]
