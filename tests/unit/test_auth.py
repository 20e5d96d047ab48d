"""L1/L2 authentication: header values, secret redaction, and the exchange-side checks."""

from __future__ import annotations

import pickle

import msgspec
import pytest

from bot.venue.auth import (
    AuthConfig,
    AuthError,
    Credentials,
    Secret,
    auth_timestamp,
    hmac_message,
    hmac_signature,
    l1_headers,
    l2_headers,
    timestamp_seconds,
    verify_l1,
    verify_l2,
)
from bot.venue.eip712 import PrivateKey, Wallet

KEY = "0x" + "0123456789abcdef" * 4
SECRET = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
PASS = "test-passphrase-not-real"
API_KEY = "00000000-1111-2222-3333-444444444444"
NOW = 1_767_225_600.0


@pytest.fixture
def creds():
    return Credentials(API_KEY, SECRET, PASS)


@pytest.fixture
def wallet():
    return Wallet(KEY)


def test_secrets_never_shown(creds, wallet):
    shown = [repr(creds), str(creds), f"{creds}", repr(creds.secret), f"{creds.passphrase}",
             str(creds.passphrase), repr(wallet), str(PrivateKey(KEY)), repr(PrivateKey(KEY))]
    for text in shown:
        assert SECRET not in text and SECRET.rstrip("=") not in text
        assert PASS not in text
        assert KEY[2:] not in text and "0123456789abcdef" not in text
    assert API_KEY in repr(creds)
    for obj in (creds, creds.secret, PrivateKey(KEY)):
        with pytest.raises(TypeError):
            pickle.dumps(obj)


def test_bad_inputs_do_not_echo_secrets():
    with pytest.raises(ValueError) as exc:
        Credentials(API_KEY, "not base64 !!", PASS)
    assert "not base64 !!" not in str(exc.value)
    with pytest.raises(ValueError, match="base64url"):
        Credentials(API_KEY, "abc$" + SECRET[4:], PASS)
    with pytest.raises(ValueError) as exc:
        PrivateKey("0xzz" + "11" * 31)
    assert "11" * 31 not in str(exc.value)
    with pytest.raises(ValueError, match="32 bytes"):
        PrivateKey("0x1234")


def test_secret_equality_and_reveal():
    assert Secret("a") == Secret("a") != Secret("b")
    assert Secret("a").reveal() == "a"


def test_hmac_message_and_padding():
    assert hmac_message("1", "get", "/x", None) == b"1GET/x"
    assert hmac_message("1", "POST", "/x", "") == b"1POST/x"
    assert hmac_message("1", "POST", "/x", b'{"a":1}') == b'1POST/x{"a":1}'
    padded = hmac_signature(SECRET, "1", "GET", "/x", None)
    assert hmac_signature(SECRET.rstrip("="), "1", "GET", "/x", None) == padded
    assert len(padded) == 44 and padded.endswith("=")
    # exact bytes: a single quote is signed as is
    assert hmac_signature(SECRET, "1", "POST", "/x", b"{'a'}") != hmac_signature(SECRET, "1", "POST", "/x", b'{"a"}')


def test_timestamp_units():
    assert auth_timestamp("ms", NOW + 0.5) == "1767225600500"
    assert auth_timestamp("s", NOW + 0.5) == "1767225600"
    assert len(auth_timestamp()) == 13
    assert AuthConfig().timestamp_unit == "ms"
    assert msgspec.convert({"timestamp_unit": "s"}, AuthConfig).timestamp_unit == "s"
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"timestamp_units": "s"}, AuthConfig)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"timestamp_unit": "us"}, AuthConfig)
    assert timestamp_seconds("1767225600500") == 1767225600.5
    assert timestamp_seconds("1767225600") == 1767225600.0


def test_l2_headers_shape(creds, wallet):
    h = l2_headers(creds, wallet.address, "GET", "/data/orders", None, "1767225600000")
    assert set(h) == {"SERVICE_ADDRESS", "SERVICE_SIGNATURE", "SERVICE_TIMESTAMP", "SERVICE_API_KEY",
                      "SERVICE_PASSPHRASE", "Content-Type"}
    assert h["SERVICE_ADDRESS"] == wallet.address
    assert h["SERVICE_SIGNATURE"] == hmac_signature(SECRET, "1767225600000", "GET", "/data/orders", None)


@pytest.mark.parametrize("stamp", ["1767225600123", "1767225600"])
def test_verify_l2_accepts_ms_and_seconds(creds, wallet, stamp):
    body = b'{"orderID":"0x11"}'
    headers = l2_headers(creds, wallet.address, "DELETE", "/order", body, stamp)
    ident = verify_l2(headers, "DELETE", "/order", body, {API_KEY: creds}.get, NOW)
    assert ident.api_key == API_KEY and ident.address == wallet.address
    # header names are case-insensitive over HTTP
    lower = {k.lower(): v for k, v in headers.items()}
    assert verify_l2(lower, "DELETE", "/order", body, {API_KEY: creds}.get, NOW).api_key == API_KEY


def test_verify_l2_refusals(creds, wallet):
    body = b'{"heartbeat_id":""}'
    good = l2_headers(creds, wallet.address, "POST", "/v1/heartbeats", body, "1767225600000")
    lookup = {API_KEY: creds}.get

    def refused(headers, method="POST", path="/v1/heartbeats", raw=body, now=NOW, match=""):
        with pytest.raises(AuthError, match=match) as exc:
            verify_l2(headers, method, path, raw, lookup, now)
        assert str(exc.value).startswith("unauthorized: ")
        assert SECRET not in str(exc.value) and PASS not in str(exc.value)

    refused(good, raw=b'{"heartbeat_id":"x"}', match="invalid signature")
    refused(good, path="/v1/heartbeat", match="invalid signature")
    refused(good, method="GET", match="invalid signature")
    refused(good, now=NOW + 61, match="window")
    refused(good, now=NOW - 61, match="window")
    refused({**good, "SERVICE_API_KEY": "other"}, match="unknown api key")
    refused({**good, "SERVICE_PASSPHRASE": "nope"}, match="passphrase")
    refused({k: v for k, v in good.items() if k != "SERVICE_SIGNATURE"}, match="missing header SERVICE_SIGNATURE")
    refused({**good, "SERVICE_TIMESTAMP": "12a"}, match="timestamp")
    # the same headers stay valid within the window (pagination reuse)
    assert verify_l2(good, "POST", "/v1/heartbeats", body, lookup, NOW + 30).api_key == API_KEY


def test_l1_round_trip(wallet):
    headers = l1_headers(wallet, 80002, 1767225600, nonce=7)
    assert headers["SERVICE_NONCE"] == "7" and headers["SERVICE_TIMESTAMP"] == "1767225600"
    assert verify_l1(headers, 80002, NOW) == (wallet.address, 7)
    with pytest.raises(AuthError, match="L1"):
        verify_l1(headers, 137, NOW)  # signed for another chain
    with pytest.raises(AuthError, match="L1"):
        verify_l1({**headers, "SERVICE_NONCE": "8"}, 80002, NOW)
    other = Wallet("0x" + "22" * 32)
    with pytest.raises(AuthError, match="L1"):
        verify_l1({**headers, "SERVICE_ADDRESS": other.address}, 80002, NOW)
    with pytest.raises(AuthError, match="window"):
        verify_l1(headers, 80002, NOW + 3600)


def test_the_live_venue_header_spelling_is_read(creds, wallet):
    """The venue's POLY_... names carry the same values (any case); the SERVICE_ name wins when both
    are sent, and a missing header is named in the spec's spelling."""
    def live(headers):
        return {k.replace("SERVICE_", "POLY_"): v for k, v in headers.items()}

    body = b'{"orderID":"0x11"}'
    h2 = l2_headers(creds, wallet.address, "DELETE", "/order", body, "1767225600")
    for headers in (live(h2), {k.lower(): v for k, v in live(h2).items()}):
        assert verify_l2(headers, "DELETE", "/order", body, {API_KEY: creds}.get, NOW).api_key == API_KEY
    both = {**live(h2), "SERVICE_SIGNATURE": "wrong"}
    with pytest.raises(AuthError, match="invalid signature"):
        verify_l2(both, "DELETE", "/order", body, {API_KEY: creds}.get, NOW)
    with pytest.raises(AuthError, match="missing header SERVICE_PASSPHRASE"):
        verify_l2({k: v for k, v in live(h2).items() if k != "POLY_PASSPHRASE"}, "DELETE", "/order", body,
                  {API_KEY: creds}.get, NOW)
    h1 = l1_headers(wallet, 80002, 1767225600, nonce=7)
    assert verify_l1(live(h1), 80002, NOW) == (wallet.address, 7)  # the nonce too


@pytest.mark.parametrize("nonce", ["1" * 100, str(2**256), "٣"])
def test_l1_nonce_outside_uint256_is_an_auth_error(wallet, nonce):
    headers = l1_headers(wallet, 80002, 1767225600, nonce=7)
    with pytest.raises(AuthError, match="nonce"):
        verify_l1({**headers, "SERVICE_NONCE": nonce}, 80002, NOW)


@pytest.mark.parametrize("stamp", ["9" * 400, "1" * 17])
def test_timestamps_too_long_to_be_one_are_auth_errors(stamp):
    with pytest.raises(AuthError, match="timestamp"):
        timestamp_seconds(stamp)


def test_credentials_from_response():
    c = Credentials.from_response({"apiKey": API_KEY, "secret": SECRET, "passphrase": PASS})
    assert c.passphrase.reveal() == PASS
    with pytest.raises(ValueError, match="passphrase"):
        Credentials.from_response({"apiKey": API_KEY, "secret": SECRET})
