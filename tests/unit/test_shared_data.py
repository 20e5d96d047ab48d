"""The exchange fixture and the CLI tests read the reference data from the one place
tests/conftest.py names (``BOT_SHARED_DIR``, else ``../shared`` beside the checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO, SHARED

READERS = """
import json
from tests.conftest import SHARED
from tests.integration.exchange_fixture import vector_seeds
from tests.unit.test_cli import vector_orders
markets, accounts = vector_seeds()
print(json.dumps({"shared": str(SHARED), "api_key": accounts[0].api_key,
                  "markets": sorted(m.condition_id for m in markets), "orders": [o["id"] for o in vector_orders()]}))
"""


def test_fixtures_read_the_vectors_from_bot_shared_dir(tmp_path) -> None:
    vectors = json.loads((SHARED / "vectors" / "order_signing.json").read_text())
    blank = "0x" + "00" * 32
    kept = [o for o in vectors["orders"] if o["inputs"]["metadata"] == blank][:1]
    assert kept, "the shared vectors hold an order without metadata"
    vectors["orders"] = kept
    vectors["api_creds"] = {**vectors["api_creds"], "apiKey": "11111111-2222-3333-4444-555555555555"}
    (tmp_path / "vectors").mkdir()
    (tmp_path / "vectors" / "order_signing.json").write_text(json.dumps(vectors))

    env = {**os.environ, "BOT_SHARED_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", READERS], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout)
    assert seen == {
        "shared": str(tmp_path),
        "api_key": "11111111-2222-3333-4444-555555555555",
        "markets": [kept[0]["inputs"]["condition_id_for_service_variant"]],
        "orders": [kept[0]["id"]],
    }
