"""Assignment of items (journals, shards) to members through Etcd.

Members announce themselves under a lease; the leader (lowest create
revision) writes assignment keys. Shared by brokers and consumers.
"""
