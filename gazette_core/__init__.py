"""Gazette in Python: the library behind the `gazette` broker and `gazctl`.

Subpackages: `broker` (journal service), `allocator` (assignment of journals to
brokers through Etcd), `keyspace` (a watched mirror of an Etcd prefix),
`consumer` (shards and recovery logs), `message`, `server` (gRPC serving),
`testing` (real-etcd and in-process broker harnesses) and `local` (the
embedded stack behind `gazctl local`).
"""
