"""Prometheus metrics shared by every process: cheap metric families, the text
exposition, and gRPC server and client metrics.

`families` holds counters, gauges and histograms whose series are plain
attributes (hot paths keep a series and add to it); `exposition` writes the
classic text format of everything registered; `grpc_server` and
`grpc_client` count RPCs under the names Go servers use for theirs.
"""
