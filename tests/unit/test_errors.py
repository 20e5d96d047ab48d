"""Typed errors from every surface's body shape; one-line, secret-free messages."""

from __future__ import annotations

import json

import pytest

from bot.venue.errors import (
    BadRequest, CancelOnlyMode, EngineRestarting, NotFound, OrderRejected, ParameterError, PostOnlyMode,
    RateLimited, RejectReason, ServerError, Unauthorized, VersionMismatch, classify_rejection,
    error_from_response, parse_retry_after,
)


def err(status, body, headers=None, **kw):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return error_from_response(status, headers or {}, content, route="POST /orders", **kw)


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (400, {"error": "unknown_field: sortBy"}, BadRequest),
        (401, {"error": "unauthorized: bad signature"}, Unauthorized),
        (404, {"type": "not found error", "error": "slug not found"}, NotFound),
        (425, {"error": "engine restarting"}, EngineRestarting),
        (429, {"error": "too many"}, RateLimited),
        (503, {"error": "paused", "code": "post_only_mode"}, PostOnlyMode),
        (503, {"error": "venue is cancel-only"}, CancelOnlyMode),
        (503, {"error": "maintenance"}, ServerError),
        (502, b"<html>bad gateway</html>", ServerError),
        (400, {"error": "order_version_mismatch"}, VersionMismatch),
        (400, {"error": "allowance is not enough"}, OrderRejected),
    ],
)
def test_status_and_body_mapping(status, body, cls) -> None:
    e = err(status, body)
    assert type(e) is cls and e.status == status


def test_message_is_the_venues_words_on_one_line() -> None:
    e = err(500, {"error": "internal_error: db\nfailure   here"})
    assert str(e) == "500 POST /orders: internal_error: db failure here"
    assert e.kind == "internal_error" and e.outcome_unknown
    assert len(str(err(400, b"x" * 5000))) < 330


def test_error_msg_and_raw_text_bodies() -> None:
    e = err(400, {"error_msg": "Invalid Heartbeat ID", "heartbeat_id": "hb-3"})
    assert e.message == "Invalid Heartbeat ID" and e.fields["heartbeat_id"] == "hb-3"
    assert err(400, b"plain words").message == "plain words"


def test_redaction() -> None:
    e = err(401, {"error": "unauthorized: passphrase s3cr3t-pass wrong", "echo": "s3cr3t-pass"},
            redact=["s3cr3t-pass"])
    assert "s3cr3t-pass" not in str(e) and "s3cr3t-pass" not in repr(e)
    assert "s3cr3t-pass" not in json.dumps(e.fields)


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=1767225600.0) == 10.0
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=1767225700.0) == 0.0
    assert parse_retry_after({}, {"retry_after_seconds": 1.5}) == 1.5
    assert parse_retry_after({}, {}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    e = err(429, {"error": "x", "retry_after_seconds": 2}, {"Retry-After": "4"})
    assert isinstance(e, RateLimited) and e.retry_after == 4.0


@pytest.mark.parametrize(
    ("msg", "reason"),
    [
        ("the market is not yet ready to process new orders", RejectReason.NOT_READY),
        ("invalid nonce", RejectReason.INVALID_NONCE),
        ("invalid expiration", RejectReason.INVALID_EXPIRATION),
        ("invalid post-only order: order crosses book", RejectReason.POST_ONLY_CROSSES),
        ("post-only mode: only post-only orders and cancels are allowed", RejectReason.POST_ONLY_MODE),
        ("order couldn't be fully filled. FOK orders are fully filled or killed.", RejectReason.FOK_KILLED),
        ("no orders found to match with FAK order. FAK orders are partially filled or killed if no match is found.",
         RejectReason.FAK_KILLED),
        ("not enough balance / allowance: need 5", RejectReason.INSUFFICIENT_BALANCE),
        ("duplicate order", RejectReason.OTHER),
        (None, RejectReason.OTHER),
    ],
)
def test_rejection_classes(msg, reason) -> None:
    assert classify_rejection(msg) is reason
    if msg:
        e = OrderRejected(msg, order_id="0x1")
        assert e.reason is reason and e.order_id == "0x1"


def test_parameter_error_names_parameter_and_is_a_value_error() -> None:
    e = ParameterError("limit", "must be 1..100, got 0")
    assert isinstance(e, ValueError) and e.parameter == "limit"
    assert str(e) == "limit: must be 1..100, got 0"
