"""Authorization of Shard RPCs against the claims of the RPC being served.

Claims select shards by their labels plus the synthetic `id` label
(docs/design/consumer.md#shard-specs), with the capabilities of
docs/design/consumer.md#the-shard-api. Without recorded claims (no auth keys
configured) every shard is visible. A shard outside the claims is answered as
SHARD_NOT_FOUND by the reading RPCs, so its existence is not revealed.
"""

from __future__ import annotations

from collections.abc import Mapping

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set, matches
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import META_ID, shard_labels
from gazette_core.server import auth
from gazette_core.server.auth import AuthError
from gazette_core.server.authz import current_claims

SERVICE = "/consumer.Shard"
SHARD_CAPABILITIES: Mapping[str, int] = {
    f"{SERVICE}/Stat": auth.READ,
    f"{SERVICE}/List": auth.LIST,
    f"{SERVICE}/Apply": auth.APPLY,
    f"{SERVICE}/GetHints": auth.READ,
    f"{SERVICE}/Unassign": auth.APPLY,
}


def labels_visible(labels: pb.LabelSet) -> bool:
    """Whether the current claims' selector matches `labels` (labels plus `id`)."""
    claims = current_claims()
    return claims is None or matches(claims.selector, labels)


def spec_visible(spec: cpb.ShardSpec) -> bool:
    """Whether the claims reach a shard by its labels and id."""
    return labels_visible(shard_labels(spec))


def id_visible(shard: str) -> bool:
    """Whether the claims reach a shard by its id alone."""
    return labels_visible(label_set((META_ID, shard)))


def authorize_apply(req: cpb.ApplyRequest) -> None:
    """AuthError unless every upsert (labels + id) and delete (id) is within the claims."""
    for change in req.changes:
        upsert = change.HasField("upsert")
        shard = change.upsert.id if upsert else change.delete
        if not (spec_visible(change.upsert) if upsert else id_visible(shard)):
            raise AuthError(f"not authorized to apply shard {shard!r}: "
                            "it is outside the authorization's selector")
