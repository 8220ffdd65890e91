"""Messages on journals, exactly once: UUIDs, framings, publishing and sequencing.

- uuid.py: Gazette's v1 UUIDs (producer ID, clock, flags) and the Clock;
- interfaces.py: the Message protocol, Envelope, and the built-in JSONMessage,
  CSVRecord and ProtoMessage types;
- framing.py (+ framing_csv.py, framing_proto.py, splitter.py): framings
  chosen by a journal's `content-type` label, with incremental splitters;
- mapping.py: Partitions (a watched List of journals) and the modulo,
  rendezvous and random mappings;
- publisher.py: Publisher (publish_committed, publish_uncommitted, ACK intents);
- reader.py: read_uncommitted, envelopes with exact offsets;
- sequencer.py (+ sequence.py): the Sequencer that commits, rolls back and
  de-duplicates, with checkpoints;
- committed.py: read_committed, for applications outside consumers.
"""
