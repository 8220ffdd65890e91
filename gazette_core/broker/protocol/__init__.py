"""Broker wire protocol: generated messages plus hand-written extensions.

`protocol_pb2` is generated from `protocol.proto` (`make protos`). The `*_ext`
modules add what the Go implementation keeps beside its messages: label sets
and selector syntax, validation with dotted-path errors, fragment content
names and SHA1 sums, route/header helpers and the read/write flags of a spec.
"""
