"""Fragment stores: one interface (`FragmentStore`) with file and memory adapters.

Cloud adapters (s3, gs, azure) plug in behind the same interface.
"""
