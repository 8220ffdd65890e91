"""The consumer framework: shards that read journals in transactions into recorded stores.

A consumer process (`service`) announces itself in Etcd and is assigned
shards by the allocator it shares with brokers; its `resolver` keeps one
`replica` per assigned shard, which recovers the shard's store from its
recovery log (`recoverylog/`, `store/`), stands by, and as primary runs the
transaction loop (`txn/`) over `gazette_core.message`. The Shard API
(`api/`: servicer, RPC handlers, client) manages shards; `protocol/` holds
the wire formats.
"""
