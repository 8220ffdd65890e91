"""Tokens: keys, minting, verification, capabilities and the Go JSON of `sel`."""

from __future__ import annotations

import base64
import json
import time

import jwt
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set, parse_selector
from gazette_core.server import auth
from gazette_core.server.auth import AuthError, Claims, Keys, mint, parse_keys, verify
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.selector_json import selector_from_json, selector_to_json

# Long enough for HS384, so that PyJWT has nothing to warn about in the tests' own calls.
KEY = b"a shared secret of this cluster, long enough for HS384"
OTHER = b"another shared secret, from before a key rotation"
B64 = base64.b64encode(KEY).decode()
B64_OTHER = base64.b64encode(OTHER).decode()


def _payload(token: str) -> dict[str, object]:
    return jwt.decode(token, options={"verify_signature": False})


def test_capability_values() -> None:
    assert (auth.LIST, auth.APPLY, auth.READ, auth.APPEND, auth.REPLICATE, auth.ALL) == (
        2, 4, 8, 16, 32, 0xFFFFFFFF)


def test_keys_are_split_on_commas_and_whitespace_and_the_first_signs() -> None:
    keys = parse_keys(f" {B64_OTHER},\n{B64} ")

    assert keys == Keys((OTHER, KEY), allow_missing=False)
    assert keys.signing == OTHER


def test_the_zero_key_allows_missing_headers_and_never_signs() -> None:
    assert parse_keys(f"AA==, {B64}") == Keys((KEY,), allow_missing=True)


@pytest.mark.parametrize(("text", "message"), [
    ("AA==", "at least one auth key besides AA== must be provided"),
    (f"{B64} not-base64!", "auth key at index 1 is not valid base64: Only base64 data is "
                           "allowed"),
])
def test_bad_keys_are_refused(text: str, message: str) -> None:
    with pytest.raises(AuthError) as caught:
        parse_keys(text)
    assert str(caught.value) == message


def test_no_keys_means_no_authorization() -> None:
    assert parse_keys("") is None
    assert parse_keys(" , ") is None


def test_minted_claims_are_go_shaped() -> None:
    token = mint(KEY, auth.READ, auth.name_selector("a/journal"), lifetime_s=3600, now=1000)

    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "JWT"}
    assert _payload(token) == {
        "cap": 8,
        "sel": {"include": {"labels": [{"name": "name", "value": "a/journal"}]},
                "exclude": {"labels": None}},
        "iat": 1000,
        "exp": 4600,
    }


def test_selector_json_omits_empty_fields_like_go() -> None:
    sel = parse_selector("app=clicks, name:prefix=acme/, !tmp")

    assert json.dumps(selector_to_json(sel), separators=(",", ":")) == (
        '{"include":{"labels":[{"name":"app","value":"clicks"},'
        '{"name":"name","value":"acme/","prefix":true}]},'
        '"exclude":{"labels":[{"name":"tmp"}]}}')
    assert selector_from_json(selector_to_json(sel)) == sel
    assert json.dumps(selector_to_json(pb.LabelSelector())) == (
        '{"include": {"labels": null}, "exclude": {"labels": null}}')


def test_selector_json_accepts_what_go_may_send() -> None:
    assert selector_from_json(None) == pb.LabelSelector()
    assert selector_from_json({"include": {}}) == pb.LabelSelector()
    with pytest.raises(ValueError, match=r"sel\.include\.labels must be a list"):
        selector_from_json({"include": {"labels": "x"}})


def test_verify_returns_claims_and_any_key_verifies() -> None:
    now = int(time.time())
    token = mint(KEY, auth.READ | auth.LIST, auth.name_selector("a/b"), now=now)

    claims = verify(token, Keys((OTHER, KEY)), auth.READ)

    assert claims == Claims(10, auth.name_selector("a/b"), now, now + 3600)


def test_hs384_tokens_verify() -> None:
    now = int(time.time())
    token = jwt.encode({"cap": 2, "iat": now, "exp": now + 60}, KEY, algorithm="HS384")

    assert verify(token, Keys((KEY,)), auth.LIST).capability == 2


@pytest.mark.parametrize(("token", "message"), [
    # Tokens here are minted at collection, so the valid ones must outlive the session.
    (mint(KEY, auth.READ, now=time.time() - 3700),
     "verifying Authorization: token has invalid claims: token is expired"),
    (mint(OTHER, auth.READ), "verifying Authorization: token signature is invalid"),
    (jwt.encode({"cap": 8}, KEY, algorithm="HS256"),
     "verifying Authorization: token has invalid claims: token is missing required claim: "
     "exp claim is required"),
    (jwt.encode({"cap": 8, "exp": int(time.time()) + 3600}, KEY, algorithm="HS256"),
     "verifying Authorization: token has invalid claims: token is missing required claim: "
     "iat claim is required"),
    (jwt.encode({"cap": 8, "exp": int(time.time()) + 3600}, KEY * 2, algorithm="HS512"),
     "verifying Authorization: token signature is invalid: signing method is not HS256 or "
     "HS384"),
    ("not.a.token", "verifying Authorization: token is malformed: Invalid header padding"),
    (mint(KEY, auth.LIST), "authorization is missing required READ capability"),
    (jwt.encode({"cap": -1, "iat": int(time.time()), "exp": int(time.time()) + 3600}, KEY,
                algorithm="HS256"),
     "verifying Authorization: invalid claims: cap must be a uint32, not -1"),
])
def test_verify_refusals(token: str, message: str) -> None:
    with pytest.raises(AuthError) as caught:
        verify(token, Keys((KEY,)), auth.READ)
    assert str(caught.value) == message


def test_expiry_has_five_seconds_of_leeway() -> None:
    token = mint(KEY, auth.READ, lifetime_s=0, now=time.time() - 3)

    assert verify(token, Keys((KEY,)), auth.READ).capability == auth.READ


def test_application_capabilities_are_named_in_binary() -> None:
    with pytest.raises(AuthError) as caught:
        verify(mint(KEY, auth.READ), Keys((KEY,)), 1 << 16)
    assert str(caught.value) == ("authorization is missing required capability "
                                 "(have 1000, but require 10000000000000000)")


def test_claims_match_labels_plus_the_name_meta_label() -> None:
    claims = Claims(auth.ALL, parse_selector("app=clicks, name:prefix=acme/"))

    assert claims.allows("acme/one", label_set(("app", "clicks")))
    assert not claims.allows("other/one", label_set(("app", "clicks")))
    assert not claims.allows("acme/one", label_set(("app", "views")))
    assert Claims(auth.ALL, parse_selector("prefix=acme/")).allows("acme/x")
    assert Claims(auth.ALL).allows("anything")


def test_call_auth_mints_per_method_or_sends_the_token() -> None:
    minted = CallAuth.from_settings(f"AA==,{B64}")
    assert minted == CallAuth(key=KEY)
    payload = _payload(minted.bearer("/protocol.Journal/Apply").removeprefix("Bearer "))
    assert (payload["cap"], payload["exp"] - payload["iat"]) == (auth.APPLY, 60)  # type: ignore[operator]
    payload = _payload(minted.bearer("/protocol.Journal/Read").removeprefix("Bearer "))
    assert (payload["cap"], payload["exp"] - payload["iat"]) == (auth.READ, 3600)  # type: ignore[operator]

    assert CallAuth.from_settings("", " tok ") == CallAuth(token="tok")
    assert CallAuth.from_settings("", " tok ").bearer("/x") == "Bearer tok"  # type: ignore[union-attr]
    assert CallAuth.from_settings("", "") is None
