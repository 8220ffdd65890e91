"""Recovery-log wire formats: generated from `recorded_op.proto`."""
