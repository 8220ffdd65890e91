"""A primary shard's transactions: the loop, its reads, sequencing, commit and ACKs.

`loop` (TxnLoop) runs transactions one after another; `reader` feeds it
envelopes from the shard's sources, `sequence` holds its errors and the
rewind of a deferred message, `commit` the barrier between one commit and
the next plus the progress it publishes, and `acks` the AppendService that
holds ACK appends until their commit resolved. A `replica` (beside this
package) runs the loop once its store is recovered (`recoverylog/`,
`store/`); the Shard API (`api/`) reads the progress it publishes.
"""
