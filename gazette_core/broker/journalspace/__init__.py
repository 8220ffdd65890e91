"""Hierarchical journal YAML: the tree `gazctl journals apply/list -o yaml` speaks.

Push-down flattens a tree into full JournalSpecs; hoist groups specs into
directories holding their shared values.
"""
