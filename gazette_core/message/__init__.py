"""Messages on journals: Gazette's v1 UUIDs and the clock that orders them.

Shared by gazctl (`attach-uuids`) now and by the consumer framework's
publisher and sequencer later.
"""
