"""Consumer applications to copy from: `stream_sum` (the exactly-once soak) and
`word_count` (a custom gRPC API routed to the shard that owns a key)."""
