"""A local mirror of an Etcd prefix, kept current by a watch, with typed decoders.

Brokers and consumers read specs, members and assignments from it and wait
on it for revisions.
"""
