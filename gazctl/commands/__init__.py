"""One module per gazctl command (`journals_list.py`, `local.py`, ...), and their helpers.

A helper of one command is named for it: `read_*.py` serve `journals_read.py`,
`append_*.py` serve `journals_append.py`. Helpers several commands use
(`selection.py`, `fragment_listing.py`, `apply_*.py`) are named for what they do.
"""
