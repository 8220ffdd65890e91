"""The journal broker: RPC handlers, replicas, fragments, stores and the client.

Each RPC lives in its own `*_api.py` beside the machinery it uses: the
`resolver` maps a journal to its route and local `replica`; `fragment` holds
spools, the fragment index and the persister; `stores` are the blob stores
fragments persist to; `client` is what applications (and `gazctl`) use.
"""
