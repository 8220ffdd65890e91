"""ShardSpec and ConsumerSpec builders shared by the Shard API tests."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb


def shard(
    shard_id: str = "shard-000",
    *,
    sources: tuple[str, ...] = ("a/source",),
    log_prefix: str = "recovery/logs",
    hint_prefix: str = "/hints",
    hint_backups: int = 2,
    labels: tuple[tuple[str, str], ...] = (),
    **fields: object,
) -> cpb.ShardSpec:
    """A valid ShardSpec; keyword fields override the defaults."""
    spec = cpb.ShardSpec(
        id=shard_id,
        sources=[cpb.ShardSpec.Source(journal=j) for j in sources],
        recovery_log_prefix=log_prefix,
        hint_prefix=hint_prefix,
        hint_backups=hint_backups,
        max_txn_duration=Duration(seconds=1),
        labels=label_set(*labels),
    )
    for name, value in fields.items():
        if isinstance(value, Duration):
            getattr(spec, name).CopyFrom(value)
        else:
            setattr(spec, name, value)
    return spec


def consumer(zone: str, suffix: str, endpoint: str = "http://127.0.0.1:9000") -> cpb.ConsumerSpec:
    """A ConsumerSpec of process `zone#suffix` at `endpoint`."""
    return cpb.ConsumerSpec(
        process_spec=pb.ProcessSpec(id=pb.ProcessSpec.ID(zone=zone, suffix=suffix),
                                    endpoint=endpoint),
        shard_limit=10,
    )


def hints(log: str, seq_no: int = 1) -> rpb.FSMHints:
    """Valid FSMHints of `log` with one live Fnode created at `seq_no`."""
    segment = rpb.Segment(author=0x1234, first_seq_no=seq_no, first_offset=10 * seq_no,
                          first_checksum=7, last_seq_no=seq_no + 2)
    return rpb.FSMHints(log=log, live_nodes=[rpb.FnodeSegments(fnode=seq_no,
                                                               segments=[segment])])
