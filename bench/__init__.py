"""Benchmarks, reported as ratios of ceilings measured in the same run (`make bench`).

`ceiling` is a bare grpc.aio server shaped like the broker's Append and Read;
`broker_bench` measures a real broker of the local stack; `__main__` runs
both and prints one JSON object.
"""
