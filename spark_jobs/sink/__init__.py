"""The `gazette` data source's writes: rows published to journals, committed exactly once.

Above source/ (whose client options it shares) and decode/ (framing kinds,
UUID columns), below the top-level face (datasource.py) that hands out its
writer. In a write's order: `options` checks the write's options, `plan`
resolves the target journals on the driver, `route` sends each row to its
journal, `columns`, `values` and `encode` make records of rows (whole
batches, a `value` column, or row by row), `publish` appends them
uncommitted on executors under producers `attempts` derives, `acks` words
the ACKs, `commit` commits or rolls back on the driver, and `writer` is the
batch and streaming writer Spark drives (`save_mode` makes its default save
mode append).
"""
