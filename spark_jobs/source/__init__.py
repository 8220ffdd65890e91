"""The `gazette` data source's reads: options, the driver's planning, and the tasks' reads.

Above decode/ (whose engine every task reads with) and below sink/ (which
shares the client options) and the top-level face (datasource.py).
`options` checks a read's options; `frame_plan` plans one task per journal
from a selection (selection.py); a batch read (`batch_reader`) cuts those
into ranges (`range_plan`), a streaming read (`stream_reader`) lists the
journals per micro-batch (`stream_listing`), decides where each ends
(`stream_plan`) and checkpoints the producers' states there
(`stream_offsets`); every task's rows come from `range_read`.
"""
