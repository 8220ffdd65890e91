"""JSONMessage decoding checks each value against the type its field declares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from gazette_core.message.framing import JSONFraming
from gazette_core.message.interfaces import JSONMessage
from gazette_core.message.json_fields import FieldTypeError


@dataclass
class Order(JSONMessage):
    n: int = 0
    price: float = 0.0
    name: str = ""
    paid: bool = False
    note: str | None = None
    tags: list[str] = field(default_factory=list)
    sizes: tuple[int, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    extra: Any = None


def decode(record: bytes) -> Order:
    msg = JSONFraming().unmarshal(record, Order())
    assert isinstance(msg, Order)
    return msg


def test_values_of_the_declared_types_are_taken() -> None:
    msg = decode(b'{"n":5,"price":2,"name":"x","paid":true,"note":null,"tags":["a"],'
                 b'"sizes":[1,2],"counts":{"a":1},"extra":{"any":[1]},"unknown":1}\n')
    assert msg == Order(n=5, price=2.0, name="x", paid=True, note=None, tags=["a"],
                        sizes=(1, 2), counts={"a": 1}, extra={"any": [1]})
    assert type(msg.price) is float


def test_null_leaves_a_field_that_is_not_optional_at_its_default() -> None:
    assert decode(b'{"n":null,"tags":null}') == Order()


@pytest.mark.parametrize(("record", "error"), [
    (b'{"n":"five"}', "field Order.n: expected int, got string 'five'"),
    (b'{"n":true}', "field Order.n: expected int, got boolean True"),
    (b'{"n":1.5}', "field Order.n: expected int, got number 1.5"),
    (b'{"price":"1"}', "field Order.price: expected float, got string '1'"),
    (b'{"paid":1}', "field Order.paid: expected bool, got number 1"),
    (b'{"name":["a"]}', "field Order.name: expected str, got array ['a']"),
    (b'{"note":5}', "field Order.note: expected str, got number 5"),
    (b'{"tags":"a"}', "field Order.tags: expected list[str], got string 'a'"),
    (b'{"tags":["a",2]}', "field Order.tags[1]: expected str, got number 2"),
    (b'{"tags":[null]}', "field Order.tags[0]: expected str, got null"),
    (b'{"sizes":[1,"2"]}', "field Order.sizes[1]: expected int, got string '2'"),
    (b'{"counts":{"a":"1"}}', "field Order.counts['a']: expected int, got string '1'"),
    (b'{"uuid":7}', "field Order.uuid: expected str, got number 7"),
])
def test_a_value_of_another_type_fails_naming_the_field(record: bytes, error: str) -> None:
    with pytest.raises(FieldTypeError) as err:
        decode(record)
    assert str(err.value) == error
