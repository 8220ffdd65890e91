"""The embedded local stack behind `gazctl local`: etcd and brokers as background processes."""
