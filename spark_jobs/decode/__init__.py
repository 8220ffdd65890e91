"""The read engine executors run: a journal's content cut into committed rows as Arrow batches.

The lowest of spark_jobs' three rooms: source/ hands it `JournalTask`s and
ranges, and sink/ borrows its framing kinds and UUID columns; it imports
neither. `content` reads a task's fragments from their stores (or a
broker's spool); `json_blocks` and `csv_blocks` decode whole blocks of
records with Arrow, `uuid_columns` parses their UUIDs as arrays, and
`bulk_sequence` keeps only the committed messages, in order; `bulk_range`
drives them over a range. A JSON block Arrow cannot take is read one
record at a time by `parse_modes`, with Spark's coercions (`spark_values`)
and the read's parse mode; other blocks fall back to one message at a time
(`rows`). `arrow_frames` and `columns` are the columns these rows become,
in Arrow and as a DataFrame.
"""
