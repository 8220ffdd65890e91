"""Messages on journals, exactly once: UUIDs, framings, publishing and sequencing.

- uuid.py: Gazette's v1 UUIDs (producer ID, clock, flags), their texts read
  and written without uuid.UUID, and the Clock; uuid_batch.py: the UUID texts
  of a whole batch as NumPy arrays;
- interfaces.py: the Message protocol, Envelope, and the built-in JSONMessage,
  CSVRecord and ProtoMessage types; structs.py: StructMessage, JSON messages
  decoded straight into msgspec structs;
- framing.py (+ framing_csv.py, framing_proto.py, splitter.py): framings
  chosen by a journal's `content-type` label, with incremental splitters;
- mapping.py: Partitions (a watched List of journals) and the modulo,
  rendezvous and random mappings;
- publisher.py: Publisher (publish_committed, publish_uncommitted, ACK intents);
- reader.py: read_uncommitted(_batches), envelopes with exact offsets;
  chunk_decode.py: a read chunk's records decoded at once or one by one;
- sequencer.py (+ sequence.py): the Sequencer that commits, rolls back and
  de-duplicates, with checkpoints, message by message or a batch at once;
- committed.py: read_committed, for applications outside consumers;
- acks.py: is_acknowledgement, telling ACKs apart without a UUID object.
"""
