"""Bad input never reaches the cluster: a table of bad inputs, each run through the CLI.

Every case runs `dualstack.cli.main` in-process against a throwaway git repo holding a fixture
stack file (never the committed Pulumi.<stack>.yaml), and asserts what a user sees: exit 2,
one `error:` line on stderr naming the key or flag, no traceback, nothing on stdout, and no
file of the repo changed.

- `CONFIG_CASES`: a bad value for one stack config key, tried through `--set` (when a flag
  can express it) and through the stack file itself;
- `WEIGHT_CASES`: bad `ascendWeight` values in the stack file, also through `status`,
  `rollback`, `policy-config` and `promote`, which read the weight;
- `FLAG_CASES`: bad command-line flags;
- `FILE_CASES`: stack files that are not acceptable as a whole (size, encoding, aliases).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dualstack.cli import main
from tests.conftest import REPO, git

STACK = "t"
GOOD_FILE = """\
# fixture stack for the bad-input table
config:
  dualstack-inference:ascendWeight: "20"
  dualstack-inference:namespace: inference-test
"""
BASE_KEYS = {"ascendWeight": '"20"', "namespace": "inference-test"}


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def template_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repo with Pulumi.yaml and the good fixture stack committed on main."""
    repo = tmp_path_factory.mktemp("bad-input") / "gitops"
    repo.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", repo / "Pulumi.yaml")
    (repo / f"Pulumi.{STACK}.yaml").write_text(GOOD_FILE, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "fixture stack")
    return repo


@pytest.fixture
def repo(template_repo: Path) -> Iterator[Path]:
    """The template repo as committed, for one case: afterwards the fixture stack file is
    put back and anything else the case left in the work tree is removed (a case that
    changed a file has already failed on it)."""
    yield template_repo
    (template_repo / f"Pulumi.{STACK}.yaml").write_text(GOOD_FILE, encoding="utf-8")
    for path in template_repo.iterdir():
        if path.name not in (".git", "Pulumi.yaml", f"Pulumi.{STACK}.yaml"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    git(template_repo, "checkout", "-q", "main")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the repo outside .git, by relative path."""
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder) / name
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """Run `dualstack -C REPO ARGS...` in-process; its exit code, stdout and stderr."""
    monkeypatch.delenv("DUALSTACK_PROMETHEUS_URL", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no pulumi CLI: nothing asks a backend

    def run(root: Path, *args: str) -> Run:
        capsys.readouterr()
        code = main(["-C", str(root), *args])
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run


def assert_refused(run: Run, before: dict[str, bytes], after: dict[str, bytes], key: str) -> None:
    """Exit 2, one error line naming `key`, no traceback, nothing on stdout, files unchanged."""
    assert run.code == 2, (run.code, run.out[-400:], run.err[-400:])
    assert "Traceback" not in run.err
    assert run.out == "", run.out[:400]
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("error: "), run.err
    assert key in lines[0], (key, run.err)
    assert len(lines[0]) < 1200
    assert after == before


def stack_file(key: str, yaml_value: str) -> str:
    """The fixture stack file with `key` (dotted path) set to the YAML text `yaml_value`."""
    top, *path = key.split(".")
    lines = ["# fixture stack with one bad value", "config:"]
    for base_key, value in BASE_KEYS.items():
        if base_key != top:
            lines.append(f"  dualstack-inference:{base_key}: {value}")
    if not path:
        lines.append(f"  dualstack-inference:{top}: {yaml_value}")
    else:
        lines.append(f"  dualstack-inference:{top}:")
        for depth, part in enumerate(path, start=2):
            value = f" {yaml_value}" if depth == len(path) + 1 else ""
            lines.append(f"{'  ' * depth}{part}:{value}")
    return "\n".join(lines) + "\n"


# (key, value as YAML text in the stack file, value for --set or None, text the error names)
CONFIG_CASES: list[tuple[str, str, str | None, str]] = [
    # strict scalars: integers
    ("ascendWeight", "false", "false", "ascendWeight"),
    ("ascendWeight", "true", "true", "ascendWeight"),
    ("ascendWeight", '" 20 "', " 20 ", "ascendWeight"),
    ("ascendWeight", '"+20"', "+20", "ascendWeight"),
    ("ascendWeight", '"020"', "020", "ascendWeight"),
    ("ascendWeight", '"2_0"', "2_0", "ascendWeight"),
    ("ascendWeight", "20.0", "20.0", "ascendWeight"),
    ("ascendWeight", "2e1", "2e1", "ascendWeight"),
    ("ascendWeight", '"0x14"', "0x14", "ascendWeight"),
    ("ascendWeight", '"abc"', "abc", "ascendWeight"),
    ("ascendWeight", '""', "", "ascendWeight"),
    ("ascendWeight", '"\u0662\u0660"', "\u0662\u0660", "ascendWeight"),
    ("ascendWeight", "[20]", "[20]", "ascendWeight"),
    ("ascendWeight", "{a: 1}", '{"a": 1}', "ascendWeight"),
    ("ascendWeight", "-5", "-5", "ascendWeight"),
    ("ascendWeight", '"150"', "150", "ascendWeight"),
    ("ascendWeight", '"33"', "33", "ascendWeight"),
    ("ascendWeight", "1e30", "1e30", "ascendWeight"),
    ("ascendWeight", "99999999999999999999999", "99999999999999999999999", "ascendWeight"),
    ("ascendWeight", "null", None, "ascendWeight"),
    ("capacity.totalReplicas", "true", "true", "capacity.totalReplicas"),
    ("capacity.totalReplicas", "0", "0", "capacity.totalReplicas"),
    ("capacity.totalReplicas", "-1", "-1", "capacity.totalReplicas"),
    ("capacity.totalReplicas", "2.5", "2.5", "capacity.totalReplicas"),
    ("capacity.totalReplicas", '"2.0"', "2.0", "capacity.totalReplicas"),
    ("capacity.totalReplicas", '" 2"', " 2", "capacity.totalReplicas"),
    ("capacity.totalReplicas", '"+2"', "+2", "capacity.totalReplicas"),
    ("capacity.totalReplicas", "3000000000", "3000000000", "capacity.totalReplicas"),
    ("capacity.totalReplicas", "1e30", "1e30", "capacity.totalReplicas"),
    ("capacity.retiredNvidiaReplicas", "false", "false", "capacity.retiredNvidiaReplicas"),
    ("capacity.retiredNvidiaReplicas", "-1", "-1", "capacity.retiredNvidiaReplicas"),
    ("capacity.retiredNvidiaReplicas", "1.0", "1.0", "capacity.retiredNvidiaReplicas"),
    # strict scalars: numbers
    ("capacity.headroom", ".nan", "nan", "capacity.headroom"),
    ("capacity.headroom", ".inf", "inf", "capacity.headroom"),
    ("capacity.headroom", "true", "true", "capacity.headroom"),
    ("capacity.headroom", '"1,2"', "1,2", "capacity.headroom"),
    ("capacity.headroom", "0.5", "0.5", "capacity.headroom"),
    ("capacity.headroom", "4", "4", "capacity.headroom"),
    ("capacity.headroom", '"1e0"', "1e0", "capacity.headroom"),
    ("capacity.headroom", '"+1.2"', "+1.2", "capacity.headroom"),
    ("capacity.headroom", '"NaN"', "NaN", "capacity.headroom"),
    ("capacity.ascendCapacityRatio", "1e-300", "1e-300", "capacity"),
    ("capacity.ascendCapacityRatio", "0", "0", "capacity.ascendCapacityRatio"),
    ("capacity.ascendCapacityRatio", "-1", "-1", "capacity.ascendCapacityRatio"),
    ("capacity.ascendCapacityRatio", "false", "false", "capacity.ascendCapacityRatio"),
    ("capacity.ascendCapacityRatio", "abc", "abc", "capacity.ascendCapacityRatio"),
    ("capacity", "5", "5", "capacity"),
    ("capacity", "[1, 2]", "[1, 2]", "capacity"),
    # service
    ("service.port", "true", "true", "service.port"),
    ("service.port", "0", "0", "service.port"),
    ("service.port", "65536", "65536", "service.port"),
    ("service.port", '"80a"', "80a", "service.port"),
    ("service.port", "80.5", "80.5", "service.port"),
    ("service.port", '"080"', "080", "service.port"),
    ("service.name", "s" * 70, "s" * 70, "service.name"),
    ("service.name", "1service", "1service", "service.name"),
    ("service.name", "Inference", "Inference", "service.name"),
    ("service.name", "s" * 57, "s" * 57, "service.name"),
    ("service.name", "my_service", "my_service", "service.name"),
    ("service.name", "5", None, "service.name"),
    # ladder
    ("ladder", "5", "5", "ladder"),
    ("ladder", '"5"', None, "ladder"),
    ("ladder", "[false, 5, 20, 50, 80, 100]", "[false, 5, 20, 50, 80, 100]", "ladder.0"),
    ("ladder", "[0, 5.5, 20, 100]", "[0, 5.5, 20, 100]", "ladder.1"),
    ("ladder", '[0, "05", 20, 100]', '[0, "05", 20, 100]', "ladder.1"),
    ("ladder", "[5, 20, 100]", "[5, 20, 100]", "ladder"),
    ("ladder", "[0, 20, 50]", "[0, 20, 50]", "ladder"),
    ("ladder", "[0, 20, 20, 100]", "[0, 20, 20, 100]", "ladder"),
    ("ladder", "{a: 1}", '{"a": 1}', "ladder"),
    ("ladder", "[0, true, 20, 100]", "[0, true, 20, 100]", "ladder.1"),
    ("ladder", "[0, 20, 150]", "[0, 20, 150]", "ladder.2"),
    # namespace and object names
    ("namespace", "Inference", "Inference", "namespace"),
    ("namespace", "n" * 64, "n" * 64, "namespace"),
    ("namespace", "ns_1", "ns_1", "namespace"),
    ("namespace", "5", None, "namespace"),
    ("namespace", "ns.1", "ns.1", "namespace"),
    ("nvidia.deploymentName", "Blue", "Blue", "nvidia.deploymentName"),
    ("nvidia.deploymentName", "d" * 64, "d" * 64, "nvidia.deploymentName"),
    ("nvidia.version", "v_1", "v_1", "nvidia.version"),
    ("ascend.deploymentName", "inference-blue", "inference-blue", "dualstack-inference"),
    # node pools
    ("ascend.pool.nodes", "[Ascend_01]", '["Ascend_01"]', "ascend.pool.nodes.0"),
    ("ascend.pool.nodes", "[]", "[]", "ascend.pool.nodes"),
    ("ascend.pool.nodes", "ascend-01", "ascend-01", "ascend.pool.nodes"),
    ("ascend.pool.nodes", '["a b"]', '["a b"]', "ascend.pool.nodes.0"),
    ("ascend.pool.nodes", '[".x"]', '[".x"]', "ascend.pool.nodes.0"),
    ("ascend.pool.nodes", '["x."]', '["x."]', "ascend.pool.nodes.0"),
    ("ascend.pool.nodes", f"[{'a' * 254}]", f'["{"a" * 254}"]', "ascend.pool.nodes.0"),
    ("ascend.pool.nodes", "[1]", "[1]", "ascend.pool.nodes.0"),
    ("ascend.pool.nodes", "[a-1, a-1]", '["a-1", "a-1"]', "ascend.pool.nodes"),
    ("ascend.pool.nodes", "[nvidia-01]", '["nvidia-01"]', "dualstack-inference"),
    ("ascend.pool.name", "nvidia", "nvidia", "dualstack-inference"),
    ("ascend.pool.name", "Ascend", "Ascend", "ascend.pool.name"),
    ("ascend.pool.labels", '{"bad key!": x}', '{"bad key!": "x"}', "ascend.pool.labels"),
    ("ascend.pool.labels", '{"bad key": x}', '{"bad key": "x"}', "ascend.pool.labels"),
    ("ascend.pool.labels", '{k: "bad value!"}', '{"k": "bad value!"}', "ascend.pool.labels"),
    ("ascend.pool.labels", f"{{k: {'v' * 100}}}", f'{{"k": "{"v" * 100}"}}', "ascend.pool.labels"),
    ("ascend.pool.labels", f"{{{'k' * 100}: v}}", f'{{"{"k" * 100}": "v"}}', "ascend.pool.labels"),
    ("ascend.pool.labels", "{pool: other}", '{"pool": "other"}', "ascend.pool.labels"),
    ("ascend.pool.labels", "{a/b/c: x}", '{"a/b/c": "x"}', "ascend.pool.labels"),
    ("ascend.pool.labels", '{"-x": y}', '{"-x": "y"}', "ascend.pool.labels"),
    ("ascend.pool.labels", '{"": x}', '{"": "x"}', "ascend.pool.labels"),
    ("ascend.pool.labels", "{k: 5}", '{"k": 5}', "ascend.pool.labels.k"),
    ("ascend.pool.labels", '{"Example.com/x": y}', '{"Example.com/x": "y"}', "ascend.pool.labels"),
    ("ascend.pool.labels", "[a]", '["a"]', "ascend.pool.labels"),
    ("nvidia.pool.labels", '{"nvidia.com/": x}', '{"nvidia.com/": "x"}', "nvidia.pool.labels"),
    ("ascend.pool.acceleratorsPerNode", "0", "0", "ascend.pool.acceleratorsPerNode"),
    ("ascend.pool.acceleratorsPerNode", "true", "true", "ascend.pool.acceleratorsPerNode"),
    ("ascend.pool.acceleratorsPerNode", "2.0", "2.0", "ascend.pool.acceleratorsPerNode"),
    ("ascend.acceleratorsPerPod", "9", "9", "dualstack-inference:ascend"),
    ("ascend.acceleratorsPerPod", "0", "0", "ascend.acceleratorsPerPod"),
    ("ascend.acceleratorsPerPod", "false", "false", "ascend.acceleratorsPerPod"),
    (
        "ascend.pool.extraTaints",
        '[{key: "bad key", effect: NoSchedule}]',
        '[{"key": "bad key", "effect": "NoSchedule"}]',
        "ascend.pool.extraTaints.0.key",
    ),
    (
        "ascend.pool.extraTaints",
        '[{key: a, value: "bad value!", effect: NoSchedule}]',
        '[{"key": "a", "value": "bad value!", "effect": "NoSchedule"}]',
        "ascend.pool.extraTaints.0.value",
    ),
    (
        "ascend.pool.extraTaints",
        "[{key: a, effect: Sometimes}]",
        '[{"key": "a", "effect": "Sometimes"}]',
        "ascend.pool.extraTaints.0.effect",
    ),
    (
        "ascend.pool.extraTaints",
        "[{key: pool, effect: NoSchedule}]",
        '[{"key": "pool", "effect": "NoSchedule"}]',
        "ascend.pool.extraTaints",
    ),
    ("ascend.pool.extraTaints", "x", "x", "ascend.pool.extraTaints"),
    ("ascend.pool.forcePatch", '"true"', None, "ascend.pool.forcePatch"),
    ("ascend.pool.forcePatch", "1", "1", "ascend.pool.forcePatch"),
    ("ascend.pool.forcePatch", "yes-please", "yes-please", "ascend.pool.forcePatch"),
    # resources: quantities and requests <= limits
    ("nvidia.resources.cpuRequest", "abc", "abc", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", '"-1"', "-1", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", '""', "", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", "1K", "1K", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", '"1 Gi"', "1 Gi", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", "1e3k", "1e3k", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", "true", "true", "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", "0.5", None, "nvidia.resources.cpuRequest"),
    ("nvidia.resources.cpuRequest", '"9"', "9", "nvidia.resources"),
    ("nvidia.resources.memoryRequest", "128Gi", "128Gi", "nvidia.resources"),
    ("nvidia.resources.memoryLimit", "10XB", "10XB", "nvidia.resources.memoryLimit"),
    ("ascend.resources.memoryLimit", "64GB", "64GB", "ascend.resources.memoryLimit"),
    ("ascend.resources.memoryLimit", '"-64Gi"', "-64Gi", "ascend.resources.memoryLimit"),
    ("ascend.resources.cpuLimit", "1e99999999999", "1e99999999999", "ascend.resources.cpuLimit"),
    ("ascend.resources", "4", "4", "ascend.resources"),
    ("nvidia.acceleratorResource", '"nvidia gpu"', "nvidia gpu", "nvidia.acceleratorResource"),
    ("nvidia.acceleratorResource", "gpu", "gpu", "nvidia.acceleratorResource"),
    ("nvidia.acceleratorResource", "kubernetes.io/gpu", "kubernetes.io/gpu", "acceleratorResource"),
    ("nvidia.acceleratorResource", "nvidia.com/", "nvidia.com/", "nvidia.acceleratorResource"),
    (
        "nvidia.acceleratorResource",
        "requests.nvidia.com/gpu",
        "requests.nvidia.com/gpu",
        "nvidia.acceleratorResource",
    ),
    ("ascend.acceleratorResource", '"huawei.com/Ascend 910"', None, "ascend.acceleratorResource"),
    ("ascend.driverHostPath", "usr/local/Ascend", "usr/local/Ascend", "ascend.driverHostPath"),
    ("ascend.driverHostPath", "relative", "relative", "ascend.driverHostPath"),
    ("ascend.driverHostPath", "/a/../b", "/a/../b", "ascend.driverHostPath"),
    ("ascend.driverHostPath", '""', "", "ascend.driverHostPath"),
    ("ascend.driverHostPath", "5", None, "ascend.driverHostPath"),
    # images
    ("ascend.image", f"registry/x:{'a' * 130}", f"registry/x:{'a' * 130}", "ascend.image"),
    ("ascend.image", "registry/x", "registry/x", "ascend.image"),
    ("ascend.image", "registry/x:latest", "registry/x:latest", "ascend.image"),
    ("ascend.image", "Registry/X:v1", "Registry/X:v1", "ascend.image"),
    ("ascend.image", '""', "", "ascend.image"),
    ("ascend.image", "5", None, "ascend.image"),
    ("nvidia.image", '"registry/x:v1 "', "registry/x:v1 ", "nvidia.image"),
    ("verifiedAscendImage", "5", None, "verifiedAscendImage"),
    ("verifiedAscendImage", "[a]", None, "verifiedAscendImage"),
    # istio
    ("istio.hosts", '["bad host!"]', '["bad host!"]', "istio.hosts.0"),
    ("istio.hosts", '["*.*.example.com"]', '["*.*.example.com"]', "istio.hosts.0"),
    ("istio.hosts", '["a..b"]', '["a..b"]', "istio.hosts.0"),
    ("istio.hosts", f'["{"h" * 64}.com"]', f'["{"h" * 64}.com"]', "istio.hosts.0"),
    ("istio.hosts", '[""]', '[""]', "istio.hosts.0"),
    ("istio.hosts", "example.com", "example.com", "istio.hosts"),
    ("istio.hosts", '["exa_mple.com"]', '["exa_mple.com"]', "istio.hosts.0"),
    ("istio.hosts", f'["{".".join(["a" * 60] * 5)}"]', None, "istio.hosts.0"),
    ("istio.gateways", '["ns/Bad"]', '["ns/Bad"]', "istio.gateways.0"),
    ("istio.gateways", '["a/b/c"]', '["a/b/c"]', "istio.gateways.0"),
    ("istio.gateways", '["ns/"]', '["ns/"]', "istio.gateways.0"),
    ("istio.gateways", '[""]', '[""]', "istio.gateways.0"),
    ("istio.apiVersion", "networking.istio.io/v2", "networking.istio.io/v2", "istio.apiVersion"),
    ("istio.virtualServiceName", "VS", "VS", "istio.virtualServiceName"),
    # probes
    ("probes.periodSeconds", "0", "0", "probes.periodSeconds"),
    ("probes.periodSeconds", "true", "true", "probes.periodSeconds"),
    ("probes.periodSeconds", "3000000000", "3000000000", "probes.periodSeconds"),
    ("probes.periodSeconds", "10s", "10s", "probes.periodSeconds"),
    ("probes.timeoutSeconds", "1.5", "1.5", "probes.timeoutSeconds"),
    ("probes.path", "health", "health", "probes.path"),
    # monitoring
    ("monitoring.ruleLabels", '{"bad key!": x}', '{"bad key!": "x"}', "monitoring.ruleLabels"),
    (
        "monitoring.ruleLabels",
        '{release: "bad value!"}',
        '{"release": "bad value!"}',
        "monitoring.ruleLabels",
    ),
    (
        "monitoring.ruleLabels",
        f"{{release: {'r' * 100}}}",
        f'{{"release": "{"r" * 100}"}}',
        "monitoring.ruleLabels",
    ),
    ("monitoring.enabled", '"false"', None, "monitoring.enabled"),
    ("monitoring.enabled", "0", "0", "monitoring.enabled"),
    ("monitoring.enabled", "no-thanks", "no-thanks", "monitoring.enabled"),
    ("monitoring.dashboard.labelValue", '"bad value!"', "bad value!", "dashboard.labelValue"),
    ("monitoring.dashboard.label", "_x", "_x", "monitoring.dashboard.label"),
    ("monitoring.dashboard.enabled", '"true"', None, "monitoring.dashboard.enabled"),
    ("monitoring.prices.nvidia", "{A100: 0}", '{"A100": 0}', "monitoring.prices.nvidia.A100"),
    ("monitoring.prices.nvidia", "{A100: true}", '{"A100": true}', "monitoring.prices.nvidia"),
    ("monitoring.prices.nvidia", "{A100: x}", '{"A100": "x"}', "monitoring.prices.nvidia.A100"),
    ("monitoring.evaluationInterval", '"30 s"', "30 s", "monitoring.evaluationInterval"),
    # slo and policy
    ("slo.minRequests", "0", "0", "slo.minRequests"),
    ("slo.minRequests", "true", "true", "slo.minRequests"),
    ("slo.minRequests", '"100.0"', "100.0", "slo.minRequests"),
    ("slo.errorRatioMargin", ".nan", "nan", "slo.errorRatioMargin"),
    ("slo.errorRatioMargin", "2", "2", "slo.errorRatioMargin"),
    ("slo.errorRatioMargin", "true", "true", "slo.errorRatioMargin"),
    ("slo.p99Factor", "0.5", "0.5", "slo.p99Factor"),
    ("slo.p99SloSeconds", "0", "0", "slo.p99SloSeconds"),
    ("slo.p99SloSeconds", ".inf", "inf", "slo.p99SloSeconds"),
    ("policy.maxStep", "0", "0", "policy.maxStep"),
    ("policy.maxStep", "101", "101", "policy.maxStep"),
    ("policy.maxStep", "true", "true", "policy.maxStep"),
    ("policy.maxStep", '"20.0"', "20.0", "policy.maxStep"),
    ("policy.releaseTagPattern", '"("', "(", "policy.releaseTagPattern"),
    ("policy.releaseTagPattern", "no-group", "no-group", "policy.releaseTagPattern"),
    # precision check
    ("precisionCheck.enabled", '"yes"', "yes", "precisionCheck.enabled"),
    ("precisionCheck.maxTokens", "0", "0", "precisionCheck.maxTokens"),
    ("precisionCheck.maxTokens", "5000", "5000", "precisionCheck.maxTokens"),
    ("precisionCheck.maxTokens", "true", "true", "precisionCheck.maxTokens"),
    ("precisionCheck.concurrency", "65", "65", "precisionCheck.concurrency"),
    ("precisionCheck.minMatchRate", "0", "0", "precisionCheck.minMatchRate"),
    ("precisionCheck.minMatchRate", "150", "150", "precisionCheck.minMatchRate"),
    ("precisionCheck.minMatchRate", ".nan", "nan", "precisionCheck.minMatchRate"),
    ("precisionCheck.retries", "11", "11", "precisionCheck.retries"),
    ("precisionCheck.retries", "-1", "-1", "precisionCheck.retries"),
    ("precisionCheck.timeoutSeconds", "0", "0", "precisionCheck.timeoutSeconds"),
    ("precisionCheck.timeoutSeconds", ".inf", "inf", "precisionCheck.timeoutSeconds"),
    ("precisionCheck.image", "python", "python", "precisionCheck.image"),
    ("precisionCheck.image", "python:latest", "python:latest", "precisionCheck.image"),
    ("precisionCheck.schedule", '"every day"', "every day", "precisionCheck.schedule"),
    ("precisionCheck.pushgatewayUrl", "ftp://x", "ftp://x", "precisionCheck.pushgatewayUrl"),
    ("precisionCheck.resources.cpuRequest", "abc", "abc", "precisionCheck.resources.cpuRequest"),
    ("precisionCheck.resources.cpuRequest", "2", "2", "precisionCheck.resources"),
    ("precisionCheck.backoffLimit", "11", "11", "precisionCheck.backoffLimit"),
    ("precisionCheck.activeDeadlineSeconds", "0", "0", "precisionCheck.activeDeadlineSeconds"),
    ("precisionCheck.activeDeadlineSeconds", "10", "10", "dualstack-inference:precisionCheck"),
    ("precisionCheck.ttlSecondsAfterFinished", "-1", "-1", "ttlSecondsAfterFinished"),
    ("precisionCheck.prompts", "[]", "[]", "precisionCheck.prompts"),
    ("precisionCheck.prompts", "x", "x", "precisionCheck.prompts"),
    ("precisionCheck.prompts", "[a, a]", '["a", "a"]', "precisionCheck.prompts"),
    # unknown and encrypted keys
    ("ascendWieght", '"20"', "20", "ascendWieght"),
    ("capacity.totalReplica", "2", "2", "capacity.totalReplica"),
    ("nvidia.pool.nodez", "[a]", '["a"]', "nvidia.pool.nodez"),
    ("ascendWeight", "{secure: AAABAKz}", None, "ascendWeight"),
]


def _config_params() -> list:
    params = []
    for key, yaml_value, set_value, expected in CONFIG_CASES:
        label = f"{key}={yaml_value[:30]}"
        params.append(pytest.param("file", key, yaml_value, expected, id=f"file:{label}"))
        if set_value is not None:
            params.append(pytest.param("set", key, set_value, expected, id=f"set:{label}"))
    return params


@pytest.mark.parametrize(("channel", "key", "value", "expected"), _config_params())
def test_bad_config_value_is_refused_by_render(
    repo: Path, cli: Callable[..., Run], channel: str, key: str, value: str, expected: str
) -> None:
    if channel == "file":
        (repo / f"Pulumi.{STACK}.yaml").write_text(stack_file(key, value), encoding="utf-8")
        args = ["render", "--stack", STACK]
    else:
        args = ["render", "--stack", STACK, "--set", f"{key}={value}"]
    before = snapshot(repo)
    run = cli(repo, *args)
    assert_refused(run, before, snapshot(repo), expected)


WEIGHT_VALUES = ["false", "true", '" 20 "', '"+20"', '"020"', '"2_0"', "20.0", "2e1", '"abc"']
WEIGHT_COMMANDS = {
    "status": ["status", "--stack", STACK],
    "rollback": ["rollback", "--stack", STACK],
    "policy-config": [
        "policy-config",
        "--stack",
        STACK,
        "--previous-weight",
        "5",
        "--base",
        "HEAD",
    ],
    "promote": ["promote", "--stack", STACK, "--skip-gate", "--reason", "test"],
    "preview": ["preview", "--stack", STACK],
    "gate": ["gate", "--stack", STACK, "--prometheus", "http://127.0.0.1:9"],
    "verify-precision": [
        "verify-precision",
        "--stack",
        STACK,
        "--nvidia",
        "http://127.0.0.1:9",
        "--ascend",
        "http://127.0.0.1:10",
    ],
}


@pytest.mark.parametrize("command", sorted(WEIGHT_COMMANDS))
@pytest.mark.parametrize("value", WEIGHT_VALUES)
def test_bad_weight_in_the_file_is_refused_by_every_reader(
    repo: Path, cli: Callable[..., Run], command: str, value: str
) -> None:
    (repo / f"Pulumi.{STACK}.yaml").write_text(stack_file("ascendWeight", value), "utf-8")
    before = snapshot(repo)
    run = cli(repo, *WEIGHT_COMMANDS[command])
    assert_refused(run, before, snapshot(repo), "dualstack-inference:ascendWeight")


PROM = ["--prometheus", "http://127.0.0.1:9"]
FLAG_CASES: list[tuple[list[str], str]] = [
    (["rollback", "--stack", STACK, "--to", "+0"], "--to"),
    (["rollback", "--stack", STACK, "--to", "00"], "--to"),
    (["rollback", "--stack", STACK, "--to", " 0"], "--to"),
    (["rollback", "--stack", STACK, "--to", "0_0"], "--to"),
    (["rollback", "--stack", STACK, "--to", "0.0"], "--to"),
    (["rollback", "--stack", STACK, "--to", "abc"], "--to"),
    (["rollback", "--stack", STACK, "--to", "7"], "--to"),
    (["rollback", "--stack", STACK, "--to", "50"], "--to"),
    (["rollback", "--stack", STACK, "--to", "\u0660"], "--to"),
    (
        ["policy-config", "--stack", STACK, "--base", "HEAD", "--previous-weight", "+5"],
        "--previous-weight",
    ),
    (
        ["policy-config", "--stack", STACK, "--base", "HEAD", "--previous-weight", "05"],
        "--previous-weight",
    ),
    (
        ["policy-config", "--stack", STACK, "--base", "HEAD", "--previous-weight", "5.0"],
        "--previous-weight",
    ),
    (
        ["policy-config", "--stack", STACK, "--base", "HEAD", "--previous-weight", "150"],
        "--previous-weight",
    ),
    (
        ["policy-config", "--stack", STACK, "--base", "HEAD", "--previous-weight", "7"],
        "--previous-weight",
    ),
    (
        ["policy-config", "--stack", STACK, "--base", "HEAD", "--previous-weight", "true"],
        "--previous-weight",
    ),
    (["ci", "rollback-targets", "--stack", STACK, "--deployed-weight", "+5"], "--deployed-weight"),
    (["ci", "rollback-targets", "--stack", STACK, "--deployed-weight", "5.0"], "--deployed-weight"),
    (["ci", "rollback-targets", "--stack", STACK, "--deployed-weight", "101"], "--deployed-weight"),
    (["gate", "--stack", STACK, *PROM, "--at", "99999999999999"], "--at"),
    (["gate", "--stack", STACK, *PROM, "--at", "1e9"], "--at"),
    (["gate", "--stack", STACK, *PROM, "--at", "nan"], "--at"),
    (["gate", "--stack", STACK, *PROM, "--at", "-5"], "--at"),
    (["gate", "--stack", STACK, *PROM, "--at", "2024-05-01T12:00:00"], "--at"),
    (["gate", "--stack", STACK, *PROM, "--at", " 1700000000"], "--at"),
    (["gate", "--stack", STACK, *PROM, "--timeout", "nan"], "--timeout"),
    (["gate", "--stack", STACK, *PROM, "--timeout", "inf"], "--timeout"),
    (["gate", "--stack", STACK, *PROM, "--timeout", "0"], "--timeout"),
    (["gate", "--stack", STACK, *PROM, "--timeout", "1e3"], "--timeout"),
    (["gate", "--stack", STACK, *PROM, "--min-coverage", "nan"], "--min-coverage"),
    (["gate", "--stack", STACK, *PROM, "--min-coverage", "150"], "--min-coverage"),
    (["gate", "--stack", STACK, *PROM, "--window", "1m"], "--window"),
    (["gate", "--stack", STACK, *PROM, "--window", "30x"], "--window"),
    (["gate", "--stack", STACK, *PROM, "--max-staleness", "2h"], "--max-staleness"),
    (["gate", "--stack", STACK, "--prometheus", "ftp://host"], "--prometheus"),
    (["gate", "--stack", STACK, "--prometheus", "http://host:port"], "--prometheus"),
    (["gate", "--stack", STACK, "--prometheus", "http://user:s3cret@127.0.0.1:9"], "--prometheus"),
    (["gate", "--stack", STACK], "--prometheus"),
    (["render", "--stack", "a/b"], "--stack"),
    (["render", "--stack", "org/project/t"], "--stack"),
    (["render", "--stack", "../t"], "--stack"),
    (["render", "--stack", ""], "--stack"),
    (["status", "--stack", "a b"], "--stack"),
    (["render", "--stack", "missing"], "Pulumi.missing.yaml"),
    (["render", "--stack", STACK, "--set", "ascendWeight"], "--set"),
    (["render", "--stack", STACK, "--set", "=5"], "--set"),
    (["render", "--stack", STACK, "--set", "capacity..totalReplicas=2"], "--set"),
    (["render", "--stack", STACK, "--set", "ladder=[0, 5"], "--set"),
    (["render", "--stack", STACK, "--set", "ascendWeight.x=5"], "--set"),
    (["render", "--stack", STACK, "--set", "x" * 5000], "--set"),
    (["promote", "--stack", STACK, "--skip-gate"], "--reason"),
    (["promote", "--stack", STACK, "--reason", "why"], "--reason"),
    (["render", "--stack", STACK, "--output", f"Pulumi.{STACK}.yaml"], "--output"),
    (
        [
            "policy-config",
            "--stack",
            STACK,
            "--base",
            "HEAD",
            "--first-deploy",
            "--output",
            "no/such/x",
        ],
        "--output",
    ),
    (["rollback", "--stack", STACK, "--body-file", "no/such/dir/body.md"], "--body-file"),
    (["gate", "--stack", STACK, *PROM, "--markdown", "no/such/dir/gate.md"], "--markdown"),
    (
        [
            "verify-precision",
            "--stack",
            STACK,
            "--nvidia",
            "http://127.0.0.1:9",
            "--ascend",
            "http://127.0.0.1:10",
            "--json",
            "no/such/dir/report.json",
        ],
        "--json",
    ),
    (
        [
            "precision-check",
            "--nvidia",
            "http://127.0.0.1:9",
            "--ascend",
            "http://127.0.0.1:10",
            "--json",
            "no/such/dir/report.json",
        ],
        "--json",
    ),
]


@pytest.mark.parametrize(
    ("args", "expected"), FLAG_CASES, ids=[" ".join(a)[:60] for a, _ in FLAG_CASES]
)
def test_bad_flag_is_refused(
    repo: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch, args: list, expected: str
) -> None:
    monkeypatch.chdir(repo)  # relative output paths are relative to the repo
    before = snapshot(repo)
    run = cli(repo, *args)
    assert_refused(run, before, snapshot(repo), expected)
    assert "s3cret" not in run.err


def _alias_bomb() -> str:
    lines = ["config:", '  dualstack-inference:ascendWeight: "20"', "  x0: &a0 [0, 5, 20, 50]"]
    for i in range(1, 9):
        lines.append(f"  x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    lines.append("  dualstack-inference:ladder: *a8")
    return "\n".join(lines) + "\n"


FILE_CASES: list[tuple[str, bytes, str]] = [
    ("not UTF-8", b'config:\n  dualstack-inference:ascendWeight: "\xff20"\n', "not UTF-8"),
    ("too large", b"# " + b"x" * (1024 * 1024 + 10) + b"\nconfig: {}\n", "bytes"),
    ("alias bomb", _alias_bomb().encode(), "YAML aliases"),
    ("not YAML", b"config:\n  a: [\n", "not valid YAML"),
    ("not a mapping", b"- a\n- b\n", "`config:` mapping"),
    ("config a list", b"config:\n  - a\n", "`config:` mapping"),
    ("empty", b"", "ascendWeight"),
    (
        "other namespace",
        b'config:\n  my-project:ascendWeight: "20"\n',
        "found my-project:ascendWeight",
    ),
]


@pytest.mark.parametrize(
    "command", ["render", "status", "rollback", "policy-config", "preview", "promote"]
)
@pytest.mark.parametrize(
    ("name", "content", "expected"), FILE_CASES, ids=[c[0] for c in FILE_CASES]
)
def test_bad_stack_file_is_refused(
    repo: Path,
    cli: Callable[..., Run],
    command: str,
    name: str,
    content: bytes,
    expected: str,
) -> None:
    (repo / f"Pulumi.{STACK}.yaml").write_bytes(content)
    args = {
        "render": ["render", "--stack", STACK],
        "status": ["status", "--stack", STACK],
        "rollback": ["rollback", "--stack", STACK],
        "policy-config": ["policy-config", "--stack", STACK, "--first-deploy", "--base", "HEAD"],
        "preview": ["preview", "--stack", STACK],
        "promote": ["promote", "--stack", STACK, "--skip-gate", "--reason", "test"],
    }[command]
    before = snapshot(repo)
    run = cli(repo, *args)
    assert_refused(run, before, snapshot(repo), expected)


def test_a_broken_stack_file_does_not_break_status_of_the_others(
    repo: Path, cli: Callable[..., Run]
) -> None:
    (repo / "Pulumi.broken.yaml").write_bytes(b"config:\n  x: \xff\n")
    run = cli(repo, "status", "--json")
    assert run.code == 2 and "Traceback" not in run.err
    assert run.err.splitlines() == [
        "error: stack broken: Pulumi.broken.yaml: not UTF-8 text (byte 0xff at offset 13); "
        "save it as UTF-8"
    ]
    assert '"stack": "t"' in run.out and '"ascendWeight": 20' in run.out


def test_a_long_value_is_cut_in_the_message(repo: Path, cli: Callable[..., Run]) -> None:
    run = cli(repo, "render", "--stack", STACK, "--set", f"namespace={'n' * 100_000}")
    assert run.code == 2
    assert len(run.err) < 600
    assert "(100000 characters)" in run.err


def test_the_alias_bomb_is_refused_quickly_and_briefly(repo: Path, cli: Callable[..., Run]) -> None:
    """The issue's case: nested aliases as `ladder` expanded to ~1.3 GB and 52 MB of stderr."""
    (repo / f"Pulumi.{STACK}.yaml").write_text(_alias_bomb(), encoding="utf-8")
    run = cli(repo, "render", "--stack", STACK)
    assert run.code == 2
    assert run.err == (
        f"error: Pulumi.{STACK}.yaml: expands to more than 100000 values (nested YAML "
        "aliases?); a stack file holds a few hundred\n"
    )


def test_secrets_in_the_prometheus_url_are_never_printed(
    repo: Path, cli: Callable[..., Run]
) -> None:
    run = cli(repo, "gate", "--stack", STACK, "--prometheus", "http://admin:hunter2@127.0.0.1:9")
    assert run.code == 2
    assert "hunter2" not in run.err and "admin" not in run.err
    assert "http://***@127.0.0.1:9" in run.err


def test_the_examples_of_the_issue_give_the_clear_error(
    repo: Path, cli: Callable[..., Run]
) -> None:
    def error(*args: str) -> str:
        run = cli(repo, "render", "--stack", STACK, *args)
        assert run.code == 2 and len(run.err.splitlines()) == 1, run.err
        return run.err.strip()

    assert error("--set", "capacity.headroom=nan") == (
        "error: dualstack-inference:capacity.headroom = 'nan': expected a number in plain "
        "decimal notation (e.g. 1.2), without sign '+', spaces, exponent, NaN or infinity"
    )
    assert error("--set", "ladder=5") == (
        "error: dualstack-inference:ladder = '5': expected a list (a YAML sequence), got a string"
    )
    assert error("--set", f"ascend.image=registry/x:{'a' * 130}").endswith(
        "the tag is 130 characters; a tag is at most 128 letters, digits, '_', '.' and '-'"
    )
    assert error("--set", 'ascend.pool.nodes=["Ascend_01"]') == (
        "error: dualstack-inference:ascend.pool.nodes.0 = 'Ascend_01': not a DNS-1123 "
        "subdomain (lowercase letters, digits, '-' and '.', each part starting and ending with "
        "a letter or digit, at most 253 characters)"
    )
    assert error("--set", "service.port=true") == (
        "error: dualstack-inference:service.port = True: expected a whole number, got a "
        "boolean (true)"
    )
    assert error("--stack", "a/b") == (
        "error: --stack 'a/b': not a stack name (letters, digits, '-', '_' and '.', at most 100 "
        "characters); for a fully qualified org/project/stack pass the stack's own name ('b')"
    )
