import io
import json

from bot.ops.logging import configure, get_logger, register_secret


def test_json_lines_with_context_and_redaction():
    out = io.StringIO()
    configure(level="info", json=True, stream=out)
    register_secret("s3cr3t-value-123")
    log = get_logger("t", token="123")
    log.info("placed", order_id="0xabc", api_secret="plain", note="key=s3cr3t-value-123")
    log.debug("hidden")
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert len(lines) == 1
    rec = lines[0]
    assert rec["event"] == "placed" and rec["token"] == "123" and rec["order_id"] == "0xabc"
    assert rec["api_secret"] == "***"
    assert "s3cr3t-value-123" not in out.getvalue()
    assert rec["level"] == "info"
