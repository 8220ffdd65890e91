"""The consumer framework: shards, transactions and recorded stores (wire formats so far)."""
