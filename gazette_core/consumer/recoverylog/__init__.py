"""Recovery logs: every file operation of an embedded store, recorded into a journal.

A recorder frames each operation as a RecordedOp (`framing`), sequenced and
chained by CRC-32C (`checksum`), stamped with its author and fenced by the
journal's `author` register (`author`). Any process can rebuild the store's
directory by playing the log back through the same state machine (`fsm`),
starting from hints kept in Etcd (`hints`, `segments`) rather than offset 0.
Wire formats are generated from `recorded_op.proto`. The sibling package
`gazette_core.consumer.store` holds the stores whose files are recorded here;
the consumer framework wires both into shards.
"""
