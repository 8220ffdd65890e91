"""Importable harnesses for tests, benchmarks and compatibility checks.

`etcd` runs a real etcd subprocess; `broker` runs in-process brokers; `upstream_client`
drives a broker with a client generated from gazette/core's own protocol.proto.
"""
