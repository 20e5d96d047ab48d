"""``--log-requests``: one line per HTTP request (method, path, status, account, latency), over real
sockets, and never a secret of the request in it."""

from __future__ import annotations

import httpx
import pytest
import structlog

from bot.venue.auth import Credentials, auth_timestamp, l2_headers
from tests.integration.exchange_fixture import start_exchange, wait_for

pytestmark = pytest.mark.integration


def test_each_request_is_one_line_without_secrets():
    ex = start_exchange(log_requests=True)
    acct = ex.demo_account
    creds = Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)
    try:
        with structlog.testing.capture_logs() as lines:
            assert httpx.get(ex.urls.clob + "/ok").status_code == 200
            headers = l2_headers(creds, acct.address, "GET", "/data/orders", None, auth_timestamp())
            listed = httpx.get(ex.urls.clob + "/data/orders", params={"market": "0xab"}, headers=headers)
            assert listed.status_code == 200
            wrong = dict(headers, SERVICE_PASSPHRASE="not-the-passphrase")
            assert httpx.get(ex.urls.clob + "/data/orders", headers=wrong).status_code == 401
            assert httpx.get(ex.urls.catalog + "/nowhere").status_code == 404
            live = {k.replace("SERVICE_", "POLY_"): v for k, v in headers.items()}  # the venue's own spelling
            assert httpx.get(ex.urls.clob + "/data/orders", params={"market": "0xab"}, headers=live).status_code == 200
            wait_for(lambda: len([x for x in lines if x.get("event") == "request"]) >= 5, what="five request lines")
    finally:
        ex.stop()
    requests = [x for x in lines if x.get("event") == "request"]
    assert [(x["method"], x["path"], x["status"], x["account"]) for x in requests] == [
        ("GET", "/ok", 200, "-"),
        ("GET", "/data/orders", 200, acct.address),
        ("GET", "/data/orders", 401, acct.address),
        ("GET", "/nowhere", 404, "-"),
        ("GET", "/data/orders", 200, acct.address),
    ]
    assert all(isinstance(x["latency_ms"], float) and x["latency_ms"] >= 0 for x in requests)
    text = repr(lines)
    for secret in (acct.creds.secret, acct.creds.passphrase, acct.creds.apiKey, headers["SERVICE_SIGNATURE"],
                   "not-the-passphrase", acct.private_key):
        assert secret not in text
