"""click_windows: clicks counted per user per event-time window by Spark Structured Streaming,
read from a journal and written back to a journal exactly once (see README.md)."""
