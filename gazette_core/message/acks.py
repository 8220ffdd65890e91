"""Telling acknowledgements apart in consume_message, without a UUID object.

ACK envelopes reach `consume_message` like any other, and most applications
skip them: `get_flags(envelope.message.get_uuid()) == Flags.ACK_TXN`. That
builds a UUID per message, which costs as much as the rest of a small
message's trip through the consumer. By the time an envelope is consumed
the sequencer has read its UUID, so a message that keeps it as canonical
text (struct and JSON messages) has its flags in four known hex digits.
"""

from __future__ import annotations

from gazette_core.message.interfaces import Envelope, message_parts, text_uuid_type
from gazette_core.message.uuid import Flags

_ACK = int(Flags.ACK_TXN)


def is_acknowledgement(envelope: Envelope) -> bool:
    """Whether `envelope` carries an ACK_TXN message (as get_flags(get_uuid()) says)."""
    msg = envelope.message
    if text_uuid_type(type(msg)):
        text = msg.uuid  # type: ignore[attr-defined]
        # Canonical text: the flags are the low 10 bits of the 4th group (bytes 8-9).
        if (type(text) is str and len(text) == 36
                and text[8] == text[13] == text[18] == text[23] == "-"):
            return int(text[19:23], 16) & 0x3FF == _ACK
    return message_parts(msg)[1] == _ACK
