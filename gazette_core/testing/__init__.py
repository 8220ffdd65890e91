"""Importable harnesses for tests and benchmarks: a real etcd subprocess and in-process brokers."""
