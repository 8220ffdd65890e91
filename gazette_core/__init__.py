"""Gazette in Python: the library behind the `gazette` broker and `gazctl`.

Subpackages: `broker` (journal service), `allocator` (assignment of journals to
brokers through Etcd), `keyspace` (a watched mirror of an Etcd prefix),
`consumer` (shards and recovery logs), `message`, `server` (gRPC serving),
`testing` (real-etcd and in-process broker harnesses) and `local` (the
embedded stack behind `gazctl local`).
"""

import os as _os

# gRPC's fork support restarts its poller threads in a forked child, where a
# subprocess's close_fds has closed their epoll descriptor: the child then
# crashes (SIGSEGV, or SIGABRT "epoll_wait error: Bad file descriptor") before
# it can exec. Our processes spawn after using gRPC (`local up` its brokers,
# `journals edit` the $EDITOR, Spark its JVM) and never use gRPC in a forked
# child, so fork support is off unless the environment asks for it. gRPC
# reads the variable when it loads, so this only helps when gazette_core is
# imported first.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
