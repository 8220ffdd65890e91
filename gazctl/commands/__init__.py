"""One module per gazctl command (`journals_list.py`, `local.py`, ...)."""
