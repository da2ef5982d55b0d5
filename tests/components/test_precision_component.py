"""The in-cluster precision check: ConfigMap, Job (and its name hash), CronJob, settings; and
the rendered Job's own command run against local servers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import precision_check as checker
from components.monitoring import metric_names
from components.precision import checker_config_map_name, checker_files, job_name
from components.settings import SettingsError, load_settings
from dualstack.offline.schemas import validate_objects
from precision_check import output
from tests.conftest import cfg, find
from tests.support.precision_servers import Behaviour, OpenAIServer

PREFIX = "inference-service-precision"


def settings_of(**keys):
    return load_settings(cfg(ascendWeight="5", **keys))


def precision_objects(objects):
    return [o for o in objects if o["metadata"]["name"].startswith(PREFIX)]


def the_job(objects):
    (job,) = [o for o in objects if o["kind"] == "Job"]
    return job


def test_job_and_config_map_are_valid_and_call_both_direct_services(render_objects):
    objects = render_objects(cfg(ascendWeight="5"))
    validate_objects(precision_objects(objects))  # kubernetes-validate, strict
    job = the_job(objects)
    assert job["metadata"]["name"] == job_name(settings_of())
    spec = job["spec"]
    assert (
        spec["backoffLimit"],
        spec["activeDeadlineSeconds"],
        spec["ttlSecondsAfterFinished"],
    ) == (
        2,
        900,
        86400,
    )
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    for hw in ("nvidia", "ascend"):
        service = find(objects, "Service", f"inference-service-{hw}")  # the direct Service
        assert service["spec"]["ports"][0]["port"] == 8000
        url = args[args.index(f"--{hw}") + 1]
        assert url == f"http://inference-service-{hw}.inference.svc.cluster.local:8000"
    assert args[args.index("--ascend-image") + 1] == "registry/inference-service:v1.2.3-npu"
    assert pod["restartPolicy"] == "Never" and pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
    }
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi"}
    # A mismatch fails the Job at once; "could not complete" is retried up to backoffLimit.
    assert spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [1]
    # No `app` label: the shared Service selects on it, the check must not get traffic.
    assert "app" not in spec["template"]["metadata"]["labels"]
    assert spec["template"]["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"


def checker_config_maps(objects):
    return [o for o in objects if o["metadata"]["name"].startswith("dualstack-precision-checker-")]


def test_config_maps_ship_the_checker_package_once_and_the_prompts_per_service(render_objects):
    objects = render_objects(cfg(ascendWeight="5"))
    (checker_map,) = checker_config_maps(objects)
    assert checker_map["metadata"]["name"] == checker_config_map_name()
    assert re.fullmatch(
        r"dualstack-precision-checker-[0-9a-f]{10}", checker_map["metadata"]["name"]
    )
    assert checker_map["metadata"]["namespace"] == "inference"
    assert "app" not in checker_map["metadata"]["labels"]  # no service's: every one's
    data = checker_map["data"]
    assert set(data) == set(checker_files())
    assert {"__init__.py", "__main__.py", "cli.py", "backend.py"} <= set(data)
    package = Path(output.__file__).parent
    assert data["backend.py"] == (package / "backend.py").read_text()
    (prompts_map,) = [o for o in precision_objects(objects) if o["kind"] == "ConfigMap"]
    assert set(prompts_map["data"]) == {"prompts.jsonl"}
    assert prompts_map["data"]["prompts.jsonl"].count("\n") == 24


def test_a_fleet_shares_one_checker_config_map_in_its_namespace(render_objects):
    from tests.conftest import fleet_config

    objects = render_objects(fleet_config())
    (checker_map,) = checker_config_maps(objects)
    jobs = [o for o in objects if o["kind"] == "Job"]
    assert len(jobs) == 3
    for job in jobs:
        (volume,) = job["spec"]["template"]["spec"]["volumes"]
        names = [source["configMap"]["name"] for source in volume["projected"]["sources"]]
        service = job["metadata"]["labels"]["app.kubernetes.io/part-of"]
        assert names == [checker_map["metadata"]["name"], f"{service}-precision-check"]
    assert checker_map["metadata"]["namespace"] == jobs[0]["metadata"]["namespace"]


def materialise(objects, root: Path) -> tuple[list[str], Path]:
    """Lay the ConfigMaps out as the projected volume's sources do; returns the Job's argv
    and workdir."""
    job = the_job(objects)
    pod = job["spec"]["template"]["spec"]
    (volume,) = pod["volumes"]
    for source in volume["projected"]["sources"]:
        config_map = find(objects, "ConfigMap", source["configMap"]["name"])
        for item in source["configMap"]["items"]:
            target = root / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(config_map["data"][item["key"]], encoding="utf-8")
    (container,) = pod["containers"]
    return [*container["command"], *container["args"]], root


ORACLE = {p.prompt: p.answers[0] for p in checker.load_prompts(None, "accuracy")}
TOPK = {"mode": "topk", "topK": 3, "baseline": True}


@pytest.mark.parametrize(
    ("check", "nvidia_behaviour", "ascend_behaviour", "expected", "requests"),
    [
        ({}, None, None, 0, 24),
        ({}, None, Behaviour(diverge_after=2), 1, 24),
        (TOPK, None, Behaviour(swap_rate=0.25, swap_rank=3), 0, 48),
        (TOPK, None, Behaviour(swap_rate=0.25, swap_rank=4), 1, 48),
        ({"mode": "accuracy"}, Behaviour(answers=ORACLE), Behaviour(answers=ORACLE), 0, 100),
    ],
    ids=["exact-pass", "exact-mismatch", "topk-pass", "topk-mismatch", "accuracy-pass"],
)
def test_the_rendered_job_command_runs_in_a_bare_python(
    render_objects, tmp_path, check, nvidia_behaviour, ascend_behaviour, expected, requests
):
    """The Job's command and args, with the in-cluster URLs and mount path pointed at local
    servers and a temporary folder, in a Python without site-packages (`-S`), like the
    stock image."""
    objects = render_objects(cfg(ascendWeight="5", precisionCheck=check))
    argv, workdir = materialise(objects, tmp_path)
    with OpenAIServer(nvidia_behaviour) as nvidia, OpenAIServer(ascend_behaviour) as ascend:
        local = [
            arg.replace(
                "http://inference-service-nvidia.inference.svc.cluster.local:8000", nvidia.url
            )
            .replace("http://inference-service-ascend.inference.svc.cluster.local:8000", ascend.url)
            .replace("/opt/precision-check", str(workdir))
            for arg in argv
        ]
        assert local[0] == "python3"
        done = subprocess.run(
            [sys.executable, "-S", *local[1:]],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=60,
            env={},
        )
    assert done.returncode == expected, done.stderr
    assert done.stdout.startswith(f"precision check {['PASS', 'MISMATCH'][expected]}: ")
    assert len(ascend.requests) == requests


def test_topk_baseline_and_accuracy_settings_reach_the_job(render_objects):
    objects = render_objects(cfg(ascendWeight="5", precisionCheck={**TOPK, "baselineMargin": 2}))
    args = the_job(objects)["spec"]["template"]["spec"]["containers"][0]["args"]
    options = checker.options_from_args(checker.cli.build_parser().parse_args(args))
    assert (options.mode, options.top_k, options.baseline, options.baseline_margin) == (
        "topk",
        3,
        True,
        2.0,
    )
    objects = render_objects(
        cfg(ascendWeight="5", precisionCheck={"mode": "accuracy", "accuracyTolerance": 3})
    )
    args = the_job(objects)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--accuracy-tolerance") + 1] == "3.0"
    prompts = find(objects, "ConfigMap", f"{PREFIX}-check")["data"]["prompts.jsonl"]
    first = checker.parse_prompts([json.loads(line) for line in prompts.splitlines()], "x")[0]
    assert (len(prompts.splitlines()), first.id, first.answers) == (100, "add-01", ("248",))


def test_stack_prompts_with_answers_reach_the_job(render_objects):
    items = [{"prompt": "2+2?", "answer": "4"}, {"id": "sky", "prompt": "Sky colour?",
             "answer": ["blue", "Blue."]}]  # fmt: skip
    objects = render_objects(
        cfg(ascendWeight="5", precisionCheck={"mode": "accuracy", "prompts": items})
    )
    prompts = find(objects, "ConfigMap", f"{PREFIX}-check")["data"]["prompts.jsonl"]
    assert prompts == (
        '{"id": "p01", "prompt": "2+2?", "answer": "4"}\n'
        '{"id": "sky", "prompt": "Sky colour?", "answer": ["blue", "Blue."]}\n'
    )


def test_job_name_hashes_images_and_check_settings_only():
    base = settings_of()
    name = job_name(base)
    assert re.fullmatch(rf"{PREFIX}-[0-9a-f]{{10}}", name) and len(name) <= 63
    assert job_name(settings_of()) == name  # deterministic
    assert job_name(load_settings(cfg(ascendWeight="20"))) == name  # a weight step reuses it
    changed = {
        "ascend image": settings_of(ascend={"image": "registry/inference-service:v1.2.4-npu"}),
        "nvidia image": settings_of(nvidia={"image": "registry/inference-service:v1.2.4-cuda"}),
        "mode": settings_of(precisionCheck={"mode": "logprobs"}),
        "top k": settings_of(precisionCheck={"mode": "topk", "topK": 4}),
        "baseline": settings_of(precisionCheck={"baseline": True}),
        "max tokens": settings_of(precisionCheck={"maxTokens": 32}),
        "prompts": settings_of(precisionCheck={"prompts": ["one", "two"]}),
    }
    names = {what: job_name(s) for what, s in changed.items()}
    assert name not in names.values() and len(set(names.values())) == len(names)


def test_cron_job_only_with_a_schedule(render_objects):
    assert not [o for o in render_objects(cfg(ascendWeight="5")) if o["kind"] == "CronJob"]
    objects = precision_objects(
        render_objects(cfg(ascendWeight="5", precisionCheck={"schedule": "0 3 * * *"}))
    )
    validate_objects(objects)
    cron = find(objects, "CronJob", f"{PREFIX}-recheck")
    assert cron["spec"]["schedule"] == "0 3 * * *"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["jobTemplate"]["spec"] == the_job(objects)["spec"]


def test_disabled_check_renders_nothing(render_objects):
    objects = render_objects(cfg(ascendWeight="5", precisionCheck={"enabled": False}))
    assert precision_objects(objects) == []
    assert checker_config_maps(objects) == []


def test_pushgateway_and_stack_prompts_reach_the_job(render_objects):
    objects = render_objects(
        cfg(
            ascendWeight="5",
            precisionCheck={
                "pushgatewayUrl": "http://pushgateway.monitoring:9091",
                "prompts": ["Hi?", "2+2?"],
                "mode": "prefix",
                "prefixLength": 16,
                "seed": None,
            },
        )
    )
    args = the_job(objects)["spec"]["template"]["spec"]["containers"][0]["args"]
    options = checker.options_from_args(checker.cli.build_parser().parse_args(args))
    assert options.pushgateway == "http://pushgateway.monitoring:9091"
    assert options.push_labels == ("namespace=inference",)
    assert (options.mode, options.prefix_length, options.seed) == ("prefix", 16, None)
    prompts = find(objects, "ConfigMap", f"{PREFIX}-check")["data"]["prompts.jsonl"]
    assert prompts == '{"id": "p01", "prompt": "Hi?"}\n{"id": "p02", "prompt": "2+2?"}\n'


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"mode": "fuzzy"}, "precisionCheck.mode = 'fuzzy': Input should be 'exact', 'prefix'"),
        ({"topK": 21}, "precisionCheck.topK = 21: Input should be less than or equal to 20"),
        ({"accuracyTolerance": 0}, "precisionCheck.accuracyTolerance = 0: Input should be greater"),
        (
            {"mode": "accuracy", "baseline": True},
            "baseline: true with mode 'accuracy': the baseline repeats a comparison",
        ),
        (
            {"mode": "accuracy", "prompts": [{"prompt": "2+2?", "answer": "4"}, "Hi?"]},
            "mode 'accuracy' needs an answer on every prompt; prompts item 2 has none",
        ),
        ({"prompts": [{"prompt": "Hi?", "reply": "x"}]}, "precisionCheck.prompts"),
        ({"minMatchRate": 150}, "precisionCheck.minMatchRate = 150: Input should be less than"),
        ({"prompts": ["same", "same"]}, "prompts item 2 repeats item 1"),
        ({"schedule": "daily"}, "precisionCheck.schedule = 'daily': expected five cron fields"),
        ({"deadlineSeconds": 1200}, "activeDeadlineSeconds (900) must exceed deadlineSeconds"),
        ({"concurrency": "abc"}, "precisionCheck.concurrency = 'abc'"),
        ({"pushgatewayUrl": "pushgateway:9091"}, "precisionCheck.pushgatewayUrl"),
        ({"timeout": 5}, "precisionCheck.timeout: unknown key"),
    ],
)
def test_bad_check_settings_name_the_key(value, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        settings_of(precisionCheck=value)


def test_metric_names_agree_with_the_checker():
    """The checker cannot import components/ (it runs alone in the Job); the names must match."""
    assert metric_names.PRECISION_PASSED == output.PASSED == "precision_check_passed"
    assert (
        metric_names.PRECISION_COMPLETED,
        metric_names.PRECISION_MATCH_RATIO,
        metric_names.PRECISION_MISMATCHES,
        metric_names.PRECISION_PROMPTS,
        metric_names.PRECISION_DURATION,
    ) == (output.COMPLETED, output.MATCH_RATIO, output.MISMATCHES, output.PROMPTS, output.DURATION)


def test_the_job_image_is_pinned_by_default(render_objects):
    """`python:3.12-slim` moves with every patch release; the default names one release."""
    container = the_job(render_objects(cfg(ascendWeight="5")))["spec"]["template"]["spec"]
    image = container["containers"][0]["image"]
    assert image == "python:3.12.7-slim-bookworm"
    digest = "python@sha256:" + "ab" * 32
    assert settings_of(precisionCheck={"image": digest}).precision_check.image == digest


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"minMatchRate": 0}, "precisionCheck.minMatchRate = 0: Input should be greater than 0"),
        ({"image": "python"}, "precisionCheck.image = 'python': no tag or digest"),
        ({"image": "python:latest"}, "precisionCheck.image = 'python:latest': the moving tag"),
        ({"image": "Python 3"}, "precisionCheck.image = 'Python 3': 'Python 3' is not an image"),
    ],
)
def test_settings_refuse_a_check_that_cannot_fail_or_a_moving_image(value, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        settings_of(precisionCheck=value)
