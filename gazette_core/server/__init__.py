"""Serving concerns shared by broker and consumer processes: listening, HTTP, auth and TLS.

`serving` lays out a process's listeners: `front` takes the one service port
and tells gRPC from HTTP by a connection's first bytes (`sniff`), relaying
gRPC to the gRPC server (`relay`) and handing HTTP to the process's
`http_mux`, which serves the `debug` paths beside the process's own routes;
`listen` binds ports and names the flag when it cannot. `auth` mints and
verifies tokens, `interceptor` enforces them on a server, `authz` answers
per-journal questions for the RPC being served, `client_auth` attaches
tokens to a client's calls, and `tls` builds server and channel credentials
from PEM files. `statuses` maps a handler's failure to the status a client
sees, and `rpc_abort` ends an RPC with it around each servicer method.
"""
