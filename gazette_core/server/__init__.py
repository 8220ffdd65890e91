"""gRPC serving concerns shared by brokers and their clients: JWT authorization and TLS.

`auth` mints and verifies tokens, `interceptor` enforces them on a server,
`authz` answers per-journal questions for the RPC being served,
`client_auth` attaches tokens to a client's calls, and `tls` builds server
and channel credentials from PEM files.
"""
