"""Recovery logs: every file operation of an embedded store, recorded into a journal.

A recorder frames each operation as a RecordedOp (`framing`), sequenced and
chained by CRC-32C (`checksum`), stamped with its author and fenced by the
journal's `author` register (`author`). Any process can rebuild the store's
directory by playing the log back through the same state machine (`fsm`),
starting from hints (`hints`, `segments`) rather than offset 0. Hints are
kept in Etcd under the shard's hint keys (`hints_store`), written by the
primary on a timer of their own (`hints_timer`).
Wire formats are generated from `recorded_op.proto`. The sibling package
`gazette_core.consumer.store` holds the stores whose files are recorded here;
the consumer framework wires both into shards.
"""
