"""gRPC serving: the asyncio server that hosts the Journal service."""
