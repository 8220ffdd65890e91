"""Fragments: the spool being written, the index of known fragments, and persistence.

A `Spool` accumulates a journal's committed content; when it rolls, the
`Persister` compresses it with the journal's codec and writes it to a store.
The `FragmentIndex` (a cover set) answers which fragment serves an offset.
"""
