"""The Shard API: the `consumer.Shard` RPC handlers, their servicer, and the client calling them.

Server side, `servicer` registers one handler module per RPC (`stat`, `list`,
`apply`, `hints` for GetHints and Unassign) that sees the process only
through the `host.ShardHost` protocol, with `authz` deciding what a caller
may see and `apply_limits` what one Apply may carry. Client side, `client`
calls the service and raises the typed `errors`; `lag` measures shards'
lag through it. Siblings: the runtime that hosts shards (`service`,
`resolver`, `replica`), their transactions (`txn/`) and the wire formats
(`protocol/`).
"""
