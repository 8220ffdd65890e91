"""Consumer wire protocol: generated from `consumer.proto`."""
