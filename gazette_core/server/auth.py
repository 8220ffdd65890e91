"""Gazette's JWT authorization: keys, capabilities, claims, minting and verification.

A token is an HS256 (or HS384) JWT whose claims carry a capability bitmask
(`cap`) and a LabelSelector (`sel`, in Go's JSON shape) limiting the journals
it reaches, plus the registered `iat` and `exp` claims (docs/design/protocol.md#authorization). Keys
are symmetric and base64-encoded; the first signs and any verifies.
"""

from __future__ import annotations

import base64
import binascii
import time
import warnings
from dataclasses import dataclass, field

import jwt

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import matches, rewrite_prefix_meta, with_meta_name
from gazette_core.errors import GazetteError
from gazette_core.server.selector_json import selector_from_json, selector_to_json

LIST = 1 << 1
APPLY = 1 << 2
READ = 1 << 3
APPEND = 1 << 4
REPLICATE = 1 << 5
ALL = 0xFFFFFFFF
CAPABILITY_NAMES = {LIST: "LIST", APPLY: "APPLY", READ: "READ", APPEND: "APPEND",
                    REPLICATE: "REPLICATE"}

ALGORITHMS = ["HS256", "HS384"]
LEEWAY_S = 5
# The key that lets requests without an authorization header through (a roll-out aid).
ALLOW_MISSING_KEY = "AA=="
HOUR_S = 3600


class AuthError(GazetteError):
    """A request lacks a valid authorization for what it asks; gRPC UNAUTHENTICATED."""

    grpc_code = "UNAUTHENTICATED"


@dataclass(frozen=True)
class Keys:
    """Parsed `--broker.auth-keys`: `signing` signs, every key of `verifying` verifies."""

    verifying: tuple[bytes, ...]
    allow_missing: bool = False

    @property
    def signing(self) -> bytes:
        return self.verifying[0]


def parse_keys(text: str) -> Keys | None:
    """Keys from base64 values separated by commas and/or whitespace; None when empty."""
    fields = text.replace(",", " ").split()
    if not fields:
        return None
    keys: list[bytes] = []
    for index, value in enumerate(fields):
        if value == ALLOW_MISSING_KEY:
            continue
        try:
            keys.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise AuthError(f"auth key at index {index} is not valid base64: {exc}") from None
    if not keys:
        raise AuthError(f"at least one auth key besides {ALLOW_MISSING_KEY} must be provided")
    return Keys(tuple(keys), ALLOW_MISSING_KEY in fields)


@dataclass
class Claims:
    """What a token grants: `capability` over journals matching `selector`, until `expires_at`."""

    capability: int
    selector: pb.LabelSelector = field(default_factory=pb.LabelSelector)
    issued_at: int = 0
    expires_at: int = 0

    def allows(self, name: str, labels: pb.LabelSet | None = None) -> bool:
        """Whether the selector matches a journal's labels plus its `name` meta-label."""
        journal = with_meta_name(labels or pb.LabelSet(), name)
        return matches(rewrite_prefix_meta(self.selector), journal)


def name_selector(journal: str) -> pb.LabelSelector:
    """The selector `name=<journal>`, as brokers scope their own peer requests."""
    return pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))


def mint(key: bytes, capability: int, selector: pb.LabelSelector | None = None,
         lifetime_s: float = HOUR_S, now: float | None = None) -> str:
    """A signed HS256 token granting `capability` over `selector` for `lifetime_s`."""
    issued = int(time.time() if now is None else now)
    payload = {"cap": capability, "sel": selector_to_json(selector or pb.LabelSelector()),
               "iat": issued, "exp": issued + int(lifetime_s)}
    with _quiet():
        return jwt.encode(payload, key, algorithm="HS256")


def _quiet() -> warnings.catch_warnings[None]:
    # Operators choose key lengths, and Go accepts any; PyJWT's warning about
    # short HMAC keys would otherwise land on gazctl's stderr.
    return warnings.catch_warnings(action="ignore", category=jwt.warnings.InsecureKeyLengthWarning)


def verify(token: str, keys: Keys, require: int) -> Claims:
    """The claims of `token` if a key verifies it and it grants `require`; else AuthError."""
    payload = None
    for key in keys.verifying:
        try:
            with _quiet():
                payload = jwt.decode(token, key, algorithms=ALGORITHMS, leeway=LEEWAY_S,
                                     options={"require": ["exp", "iat"]})
            break
        except jwt.InvalidSignatureError:
            continue  # another key may have signed it
        except jwt.PyJWTError as exc:
            raise AuthError(f"verifying Authorization: {_reason(exc)}") from None
    if payload is None:
        raise AuthError("verifying Authorization: token signature is invalid")
    claims = _claims(payload)
    check_capability(claims.capability, require)
    return claims


def _claims(payload: dict[str, object]) -> Claims:
    try:
        cap = payload.get("cap", 0)
        if not isinstance(cap, int) or not 0 <= cap <= ALL:
            raise ValueError(f"cap must be a uint32, not {cap!r}")
        selector = selector_from_json(payload.get("sel"))
    except ValueError as exc:
        raise AuthError(f"verifying Authorization: invalid claims: {exc}") from None
    return Claims(cap, selector, _int(payload.get("iat")), _int(payload.get("exp")))


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def check_capability(actual: int, require: int) -> None:
    """AuthError naming the first missing capability unless `actual` has all of `require`."""
    if actual & require == require:
        return
    for bit, name in CAPABILITY_NAMES.items():
        if require & bit and not actual & bit:
            raise AuthError(f"authorization is missing required {name} capability")
    raise AuthError(f"authorization is missing required capability "
                    f"(have {actual:b}, but require {require:b})")


def _reason(exc: jwt.PyJWTError) -> str:
    """Go's wording for the common failures, so both brokers say the same thing."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "token has invalid claims: token is expired"
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"token has invalid claims: token is missing required claim: {exc.claim} " \
               "claim is required"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "token has invalid claims: token used before issued"
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return "token signature is invalid: signing method is not HS256 or HS384"
    if isinstance(exc, jwt.DecodeError):
        return f"token is malformed: {exc}"
    return str(exc)
