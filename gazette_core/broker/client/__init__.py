"""The broker client: list/apply helpers, readers, appenders and the AppendService.

Everything is asyncio over `grpc.aio`; `gazctl` and applications share it.
"""
