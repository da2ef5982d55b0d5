"""pool-capacity over hand-built stacks, and the pod arithmetic it rests on."""

from __future__ import annotations

import copy
import hashlib
from typing import ClassVar

import pytest
from pulumi_policy.proxy import unknown_checking_proxy

from dualstack.offline.policy_config import template_facts, template_hash
from policies.capacity import PoolSize, _fits_node_by_node
from policies.pod_counts import (
    PodCount,
    PodCountError,
    accelerators_per_pod,
    peak_pods,
    whole_quantity,
)
from policies.pod_counts import template_hash as pack_template_hash
from policies.stack_view import StackView
from tests.support.policy_objects import (
    NOT_APPLICABLE,
    NVIDIA_IMAGE,
    container,
    deployment,
    find,
    floats,
    good_stack,
    stack_args,
    stack_reports,
    stack_violations,
    urn,
)


def pools(objects, config=None):
    return stack_violations("pool-capacity", objects, config)


def surge_one(stack):
    """The program's rolling update: maxSurge 1, maxUnavailable 0."""
    for obj in stack:
        if obj["kind"] == "Deployment":
            obj["spec"]["strategy"] = {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            }
    return stack


def side_workload(kind, hardware="nvidia", accelerators=1, **spec):
    """A workload of `kind` pinned to `hardware`'s pool, each pod taking `accelerators`."""
    pod = copy.deepcopy(deployment(hardware, 1, "registry/batch:v1.0.0-x"))["spec"]["template"]
    pod["spec"]["containers"] = [container(hardware, "registry/batch:v1.0.0-x")]
    resource = "nvidia.com/gpu" if hardware == "nvidia" else "huawei.com/Ascend910"
    for section in ("requests", "limits"):
        pod["spec"]["containers"][0]["resources"][section][resource] = str(accelerators)
    pod["metadata"]["labels"] = {"app": f"side-{kind.lower()}"}
    meta = {"name": f"side-{kind.lower()}", "namespace": "batch"}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod["spec"]}
    if kind == "CronJob":
        job = {"template": pod, **spec}
        body = {"schedule": "0 * * * *", "jobTemplate": {"spec": job}}
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": body}
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": {"template": pod, **spec}}


def item(obj):
    [workload] = StackView.of(stack_args([obj]).resources).workloads
    return workload


class TestPoolCapacity:
    @pytest.mark.parametrize("weight", [0, 5, 20, 50, 80, 100])
    def test_clean_stack_passes_at_every_step(self, weight):
        assert pools(surge_one(good_stack(weight))) == []
        assert pools(good_stack(weight)) == []  # default maxSurge 25% too

    def test_nvidia_pods_beyond_the_gpus_fail(self):
        """The trial's case: totalReplicas=100 puts 100 pods on 3 nodes x 8 GPUs."""
        stack = surge_one(good_stack(5))
        find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 100
        [message] = pools(stack)
        assert message.startswith("pool 'nvidia' is too small: a rollout takes up to 101 ")
        assert (
            "nvidia.com/gpu (Deployment inference/inference-blue: (100 replicas + maxSurge 1) x 1)"
            in message
        )
        assert "but the pool has 24 (3 nodes x 8 acceleratorsPerNode)" in message
        assert "capacity.totalReplicas" in message and "add nodes to the pool" in message

    def test_ascend_pods_beyond_the_npus_fail(self):
        """The trial's case at 100%: 24 Ascend pods (+1 surge) on 2 nodes x 8 NPUs."""
        stack = surge_one(good_stack(100, ascend_replicas=24))
        [message] = pools(stack)
        assert (
            "pool 'ascend' is too small: a rollout takes up to 25 huawei.com/Ascend910" in message
        )
        assert "but the pool has 16 (2 nodes x 8 acceleratorsPerNode)" in message

    def test_exactly_full_pool_passes_and_one_more_fails(self):
        stack = surge_one(good_stack(100, ascend_replicas=15))
        assert pools(stack) == []  # 15 + 1 surge = 16 NPUs = 2 x 8
        find(stack, "Deployment", "ascend")["spec"]["replicas"] = 16
        assert len(pools(stack)) == 1

    def test_the_surge_counts_default_25_percent_rounded_up(self):
        stack = good_stack(100, ascend_replicas=13)  # no strategy: maxSurge 25% of 13 -> 4
        [message] = pools(stack)
        assert "(13 replicas + maxSurge 4 (default 25%)) x 1" in message
        assert "takes up to 17 " in message

    def test_every_workload_taking_the_pool_counts(self):
        """A batch Job and a DaemonSet on the NVIDIA pool add to the backend's pods."""
        stack = surge_one(good_stack(20))
        stack.append(side_workload("Job", accelerators=2, parallelism=6))  # 12 GPUs
        assert pools(stack) == []  # 5 + 12 = 17 <= 24
        stack.append(side_workload("DaemonSet", accelerators=3))  # 3 nodes x 3 GPUs
        [message] = pools(stack)
        assert "takes up to 26 nvidia.com/gpu" in message
        assert "Job batch/side-job: (parallelism 6) x 2" in message
        assert "DaemonSet batch/side-daemonset: (3 nodes) x 3" in message

    def test_accelerators_per_pod_multiply(self):
        stack = surge_one(good_stack(20))
        nvidia = find(stack, "Deployment", "nvidia")
        for section in ("requests", "limits"):
            nvidia["spec"]["template"]["spec"]["containers"][0]["resources"][section][
                "nvidia.com/gpu"
            ] = "8"
        [message] = pools(stack)  # (4 + 1) x 8 = 40 > 24
        assert "takes up to 40 nvidia.com/gpu" in message and ") x 8" in message

    def test_pool_sizes_config_overrides_default(self):
        stack = surge_one(good_stack(100, ascend_replicas=24))
        bigger = {"ascend": {"nodes": 4, "acceleratorsPerNode": 8}, "nvidia": {"nodes": 3}}
        assert pools(stack, {"poolSizes": bigger}) == []
        denser = {"ascend": {"nodes": 2, "acceleratorsPerNode": 16}, "nvidia": {"nodes": 3}}
        assert pools(stack, {"poolSizes": denser}) == []
        smaller = {"ascend": {"nodes": 3, "acceleratorsPerNode": 8}, "nvidia": {"nodes": 3}}
        [message] = pools(stack, {"poolSizes": smaller})
        assert "the pool has 24 (3 nodes x 8 acceleratorsPerNode)" in message

    def test_accelerator_pools_config_overrides_default(self):
        stack = surge_one(good_stack(20))
        config = {
            "acceleratorPools": {"nvidia.com/gpu": "gpu", "huawei.com/Ascend910": "npu"},
            "poolSizes": {"gpu": {"nodes": 1, "acceleratorsPerNode": 4}, "npu": {"nodes": 1}},
        }
        [message] = pools(stack, config)
        assert "pool 'gpu' is too small: a rollout takes up to 5 nvidia.com/gpu" in message

    def test_missing_accelerators_per_node_means_eight(self):
        stack = surge_one(good_stack(100, ascend_replicas=15))
        config = {"poolSizes": {"nvidia": {"nodes": 3}, "ascend": {"nodes": 2}}}
        assert pools(stack, config) == []
        find(stack, "Deployment", "ascend")["spec"]["replicas"] = 16
        [message] = pools(stack, config)
        assert "(2 nodes x 8 acceleratorsPerNode)" in message

    def test_missing_replicas_and_strategy_mean_one_pod_and_25_percent(self):
        stack = good_stack(20)
        del find(stack, "Deployment", "nvidia")["spec"]["replicas"]
        config = {
            "poolSizes": {"nvidia": {"nodes": 1, "acceleratorsPerNode": 1}, "ascend": {"nodes": 2}}
        }
        [message] = pools(stack, config)
        assert "(1 replicas + maxSurge 1 (default 25%)) x 1" in message

    def test_a_pool_of_zero_nodes_is_valid_while_nothing_runs_on_it(self):
        """Before the first Ascend step the Ascend pool may have no nodes yet."""
        config = {"poolSizes": {"nvidia": {"nodes": 3}, "ascend": {"nodes": 0}}}
        stack = [o for o in good_stack(20) if o["kind"] != "Deployment" or "blue" in str(o)]
        assert pools(stack, config) == []
        [message] = pools(good_stack(20), config)
        assert message.startswith("pool 'ascend' is too small: a rollout takes up to 3 ")
        assert "but the pool has 0 (0 nodes x 8 acceleratorsPerNode)" in message

    @pytest.mark.parametrize(
        ("config", "expected"),
        [
            ({"poolSizes": {"nvidia": {"nodes": 3}}}, "poolSizes has no entry for pool 'ascend'"),
            ({"poolSizes": "big"}, "poolSizes has no entry for pool 'ascend'"),
            (
                {"poolSizes": {"nvidia": {"nodes": "three"}, "ascend": {"nodes": 2}}},
                "poolSizes.nvidia.nodes = 'three' is not a node count",
            ),
            (
                {"poolSizes": {"nvidia": {"acceleratorsPerNode": 8}, "ascend": {"nodes": 2}}},
                "poolSizes.nvidia.nodes = None",
            ),
            (
                {
                    "poolSizes": {
                        "nvidia": {"nodes": 3, "acceleratorsPerNode": 0},
                        "ascend": {"nodes": 2},
                    }
                },
                "poolSizes.nvidia.acceleratorsPerNode = 0.0 is not an integer >= 1",
            ),
        ],
    )
    def test_bad_config_fails_closed(self, config, expected):
        [message] = pools(good_stack(20), config)
        assert message.startswith(f"policy config {expected}")

    @pytest.mark.parametrize(
        ("edit", "expected"),
        [
            (lambda d: d["spec"].update(replicas="many"), "spec.replicas is 'many'"),
            (
                lambda d: d["spec"].update(strategy={"rollingUpdate": {"maxSurge": "lots"}}),
                "spec.strategy.rollingUpdate.maxSurge is 'lots'",
            ),
            (
                lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
                    resources={"limits": {"nvidia.com/gpu": "1k"}}
                ),
                "container 'inference' requests nvidia.com/gpu: '1k', not a whole number",
            ),
            (
                lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"][
                    "requests"
                ].update({"nvidia.com/gpu": "half"}),
                "container 'inference' requests nvidia.com/gpu: 'half', not a whole number",
            ),
        ],
    )
    def test_unreadable_counts_fail_closed(self, edit, expected):
        stack = good_stack(20)
        edit(find(stack, "Deployment", "nvidia"))
        [message] = pools(stack)
        assert message.startswith("cannot count what Deployment inference/inference-blue takes")
        assert expected in message

    def test_the_only_accelerator_workload_unreadable_still_fails(self):
        """With nothing else to count, the unreadable workload is a violation on its own URN,
        not a policy that does not apply."""
        nvidia = find(good_stack(20), "Deployment", "nvidia")
        nvidia["spec"]["replicas"] = "many"
        [(message, where)] = stack_reports("pool-capacity", [nvidia])
        assert message.startswith("cannot count what Deployment inference/inference-blue takes")
        assert where == urn(nvidia)

    def test_no_accelerator_workload_is_not_applicable(self):
        stack = [o for o in good_stack(20) if o["kind"] != "Deployment"]
        assert pools(stack) == NOT_APPLICABLE


@pytest.mark.parametrize(
    ("kind", "spec", "pods", "how"),
    [
        ("Deployment", {"replicas": 4, "strategy": {"type": "Recreate"}}, 4, "4 replicas"),
        (
            "Deployment",
            {"replicas": 10, "strategy": {"rollingUpdate": {"maxSurge": "30%"}}},
            13,
            "10 replicas + maxSurge 30% = 3",
        ),
        ("Deployment", {"replicas": 0}, 0, "0 replicas"),
        ("StatefulSet", {"replicas": 3}, 3, "3 replicas"),
        ("ReplicaSet", {}, 1, "1 replicas"),
        (
            "DaemonSet",
            {"updateStrategy": {"rollingUpdate": {"maxSurge": "50%"}}},
            5,
            "3 nodes + maxSurge 2",
        ),
        ("DaemonSet", {"updateStrategy": {"type": "OnDelete"}}, 3, "3 nodes"),
        (
            "DaemonSet",  # OnDelete replaces no pod by itself: a stray maxSurge is not read
            {"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"maxSurge": 1}}},
            3,
            "3 nodes",
        ),
        ("Job", {"parallelism": 4}, 4, "parallelism 4"),  # no completions: 4 run at once
        ("Job", {"parallelism": 4, "completions": 0}, 0, "parallelism 0"),
        ("Job", {"parallelism": 8, "completions": 2}, 2, "parallelism 2"),
        ("Job", {}, 1, "parallelism 1"),
        ("CronJob", {"parallelism": 3}, 3, "parallelism 3"),
        ("Pod", {}, 1, "1 pod"),
    ],
)
def test_peak_pods(kind, spec, pods, how):
    count = peak_pods(item(side_workload(kind, **spec)), pool_nodes=3)
    assert (count.pods, count.how) == (pods, how)


def test_accelerators_per_pod_counts_init_containers_and_sidecars():
    gpu = {"nvidia.com/gpu"}

    def c(n, **extra):
        return {"name": "c", "resources": {"limits": {"nvidia.com/gpu": n}}, **extra}

    assert accelerators_per_pod({"containers": [c(1), c(2)]}, gpu) == 3
    assert accelerators_per_pod({"containers": [c(1)], "initContainers": [c(4)]}, gpu) == 4
    sidecar = c(1, restartPolicy="Always")
    assert accelerators_per_pod({"containers": [c(2)], "initContainers": [sidecar]}, gpu) == 3
    two_sidecars = [sidecar, c(2, restartPolicy="Always")]  # both keep running: 1 + 2 + 2
    assert accelerators_per_pod({"containers": [c(2)], "initContainers": two_sidecars}, gpu) == 5
    after_sidecar = [sidecar, c(3)]  # the init container runs beside the sidecar: 1 + 3
    assert accelerators_per_pod({"containers": [c(1)], "initContainers": after_sidecar}, gpu) == 4
    assert accelerators_per_pod({"containers": [{"name": "cpu-only"}]}, gpu) == 0
    with pytest.raises(PodCountError, match="'half', not a whole number"):
        accelerators_per_pod({"containers": [c("half")]}, gpu)


def test_an_unreadable_daemonset_surge_names_its_field():
    agent = side_workload("DaemonSet", updateStrategy={"rollingUpdate": {"maxSurge": "lots"}})
    with pytest.raises(PodCountError) as unreadable:
        peak_pods(item(agent), pool_nodes=3)
    assert str(unreadable.value) == (
        "spec.updateStrategy.rollingUpdate.maxSurge is 'lots', neither a whole number nor a "
        "percentage"
    )


def test_a_pool_of_two_resource_kinds_sums_both_per_container():
    """A container requesting a whole GPU and a MIG slice of the same pool takes both; one
    requesting only the later-sorted kind still counts it."""
    kinds = {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}
    both = {"resources": {"limits": {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "2"}}}
    later_only = {"resources": {"limits": {"nvidia.com/mig-1g.10gb": "2"}}}
    assert accelerators_per_pod({"containers": [both]}, kinds) == 3
    assert accelerators_per_pod({"containers": [later_only]}, kinds) == 2


def test_an_unreadable_request_names_the_container_or_a_question_mark():
    bad = {"resources": {"requests": {"nvidia.com/gpu": "1.5"}}}
    with pytest.raises(PodCountError) as unnamed:
        accelerators_per_pod({"containers": [bad]}, {"nvidia.com/gpu"})
    assert str(unnamed.value) == "container '?' requests nvidia.com/gpu: '1.5', not a whole number"


@pytest.mark.parametrize(
    ("value", "count"), [(4, 4), (4.0, 4), ("4", 4), (" 2 ", 2), ("1k", None), (-1, None)]
)
def test_whole_quantity(value, count):
    assert whole_quantity(value) == count


SHRUNK = {"nvidia": {"nodes": 1, "acceleratorsPerNode": 4}, "ascend": {"nodes": 2}}
"""An NVIDIA pool shrunk to 4 GPUs while Ascend served 100%: room for 4 NVIDIA pods, no
surge pod."""


def rollback(weight, **edits):
    """The config and head of a rollback from 100% to `weight` onto the SHRUNK pool: the
    previous templates are the 100% stack's (as `dualstack preview --base` writes them)."""
    base = surge_one(good_stack(100, ascend_replicas=5))
    head = surge_one(good_stack(weight))
    for hardware, image in edits.items():
        container_of = find(head, "Deployment", hardware)["spec"]["template"]["spec"]
        container_of["containers"][0]["image"] = image
    return head, {"poolSizes": SHRUNK, "previousPodTemplates": template_facts(base)}


class TestSurgeOnlyWhenThePodTemplateChanges:
    """Rollback is never blocked: a change of `replicas` alone scales, it rolls nothing out."""

    @pytest.mark.parametrize("weight", [80, 0])
    def test_a_rollback_onto_a_shrunk_nvidia_pool_passes(self, weight):
        head, config = rollback(weight)
        assert find(head, "Deployment", "nvidia")["spec"]["replicas"] == 4  # 1 at 100%
        assert pools(head, config) == []

    @pytest.mark.parametrize("weight", [80, 0])
    def test_the_same_rollback_without_the_previous_templates_counts_the_surge(self, weight):
        """Absent key (first deploy, unknown): conservative, 4 + 1 surge > 4 GPUs."""
        head, config = rollback(weight)
        del config["previousPodTemplates"]
        [message] = pools(head, config)
        assert message.startswith(
            "pool 'nvidia' is too small: a rollout takes up to 5 nvidia.com/gpu (Deployment "
            "inference/inference-blue: (4 replicas + maxSurge 1) x 1) but the pool has 4 "
            "(1 nodes x 4 acceleratorsPerNode)"
        )

    def test_an_image_change_with_the_same_shrunk_pool_counts_the_surge(self):
        head, config = rollback(80, nvidia="registry/inference-service:v1.2.4-cuda")
        [message] = pools(head, config)
        assert "takes up to 5 nvidia.com/gpu" in message
        assert "inference-blue: (4 replicas + maxSurge 1) x 1" in message

    def test_an_unchanged_template_counts_its_replicas_and_says_so(self):
        head, config = rollback(80)
        config["poolSizes"] = {
            "nvidia": {"nodes": 1, "acceleratorsPerNode": 3},
            "ascend": {"nodes": 2},
        }
        [message] = pools(head, config)
        assert "takes up to 4 nvidia.com/gpu" in message
        assert "inference-blue: (4 replicas, pod template unchanged: no surge) x 1" in message

    def test_a_deployment_missing_from_the_previous_templates_counts_its_surge(self):
        head, config = rollback(80)
        config["previousPodTemplates"] = {
            name: digest
            for name, digest in config["previousPodTemplates"].items()
            if name != "inference-blue"
        }
        [message] = pools(head, config)
        assert "(4 replicas + maxSurge 1) x 1" in message

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (
                {"inference-blue": "abc"},
                "previousPodTemplates.inference-blue = 'abc' is not a sha256 hex digest (64 "
                "lowercase hex digits)",
            ),
            (
                {"inference-blue": "A" * 64},
                f"previousPodTemplates.inference-blue = '{'A' * 64}' is not a sha256 hex digest "
                "(64 lowercase hex digits)",
            ),
            (
                {"inference-blue": 5},
                "previousPodTemplates.inference-blue = 5.0 is not a sha256 hex digest (64 "
                "lowercase hex digits)",
            ),
            (
                "all",
                "previousPodTemplates = 'all' is not a map of Deployment name -> sha256 hex",
            ),
        ],
    )
    def test_malformed_previous_templates_fail_closed(self, value, expected):
        head, config = rollback(80)
        config["previousPodTemplates"] = value
        assert pools(head, config) == [
            f"policy config {expected}; regenerate it with `dualstack policy-config`"
        ]


def test_pack_and_config_writer_hash_templates_alike():
    """The pack's digest (engine-shaped props: floats, read-only proxies) equals the one
    `dualstack policy-config` writes from plain objects; the two functions are duplicates.
    Both hash the canonical JSON: sorted keys, no spaces, whole numbers as integers."""
    tricky = {"b": {"z": 0, "y": [{"x": 3}]}, "a": [1, 2.5, True, None, "\u00fc"]}
    text = '{"a":[1,2.5,true,null,"\\u00fc"],"b":{"y":[{"x":3}],"z":0}}'
    expected = hashlib.sha256(text.encode()).hexdigest()
    assert template_hash(tricky) == expected
    assert pack_template_hash(unknown_checking_proxy(floats(tricky))) == expected
    for obj in [find(good_stack(20), "Deployment", hw) for hw in ("nvidia", "ascend")]:
        [resource] = stack_args([obj]).resources
        engine_template = resource.props["spec"]["template"]
        assert isinstance(engine_template["spec"]["securityContext"]["runAsUser"], float)
        assert pack_template_hash(engine_template) == template_hash(obj["spec"]["template"])


def with_gpus(workload: dict, count: int) -> dict:
    """`workload` requesting `count` nvidia.com/gpu per pod (requests and limits)."""
    resources = workload["spec"]["template"]["spec"]["containers"][0]["resources"]
    for side in resources.values():
        side["nvidia.com/gpu"] = str(count)
    return workload


class TestPoolCapacityMessages:
    """The messages whole, and the URN a reviewer sees them on: the workload's when one
    workload takes the pool, the stack's (None) when several share it."""

    NODE_BY_NODE = (
        "but a pod's accelerators all come from one node and {nodes} nodes x 5 "
        "acceleratorsPerNode leave no node with room for some pod, so it would stay Pending; "
        "run fewer or smaller pods, or add nodes to the pool"
    )

    def test_one_workload_that_fits_in_total_but_not_node_by_node(self):
        chat = with_gpus(deployment("nvidia", 2, NVIDIA_IMAGE), 3)
        config = {
            "poolSizes": {"nvidia": {"nodes": 2, "acceleratorsPerNode": 5}, "ascend": {"nodes": 2}}
        }
        assert stack_reports("pool-capacity", [chat], config) == [
            (
                "pool 'nvidia' cannot place its pods node by node: a rollout takes up to 9 "
                "nvidia.com/gpu (Deployment inference/inference-blue: (2 replicas + maxSurge 1 "
                "(default 25%)) x 3), within the pool's 10, " + self.NODE_BY_NODE.format(nodes=2),
                urn(chat),
            )
        ]

    def test_two_workloads_that_fit_in_total_but_not_node_by_node(self):
        chat = with_gpus(deployment("nvidia", 2, NVIDIA_IMAGE), 3)
        embedder = copy.deepcopy(chat)
        embedder["metadata"]["name"] = "embedder-blue"
        embedder["spec"]["replicas"] = 1
        config = {
            "poolSizes": {"nvidia": {"nodes": 3, "acceleratorsPerNode": 5}, "ascend": {"nodes": 2}}
        }
        assert stack_reports("pool-capacity", [chat, embedder], config) == [
            (
                "pool 'nvidia' cannot place its pods node by node: a rollout takes up to 15 "
                "nvidia.com/gpu (Deployment inference/inference-blue: (2 replicas + maxSurge 1 "
                "(default 25%)) x 3; Deployment inference/embedder-blue: (1 replicas + maxSurge 1 "
                "(default 25%)) x 3), within the pool's 15, " + self.NODE_BY_NODE.format(nodes=3),
                None,
            )
        ]

    def test_a_pool_of_two_resource_kinds_names_both(self):
        chat = with_gpus(deployment("nvidia", 2, NVIDIA_IMAGE), 3)
        config = {
            "poolSizes": {"nvidia": {"nodes": 1, "acceleratorsPerNode": 5}, "ascend": {"nodes": 2}},
            "acceleratorPools": {
                "nvidia.com/mig-1g.10gb": "nvidia",
                "nvidia.com/gpu": "nvidia",
                "huawei.com/Ascend910": "ascend",
            },
        }
        [(message, where)] = stack_reports("pool-capacity", [chat], config)
        assert message.startswith(
            "pool 'nvidia' is too small: a rollout takes up to 9 nvidia.com/gpu, "
            "nvidia.com/mig-1g.10gb (Deployment inference/inference-blue: "
        )
        assert where == urn(chat)

    def test_a_stack_without_accelerator_workloads_says_why_it_does_not_apply(self):
        stack = [o for o in good_stack(20) if o["kind"] != "Deployment"]
        assert stack_reports("pool-capacity", stack) == (
            "not applicable: no workload requests an accelerator of acceleratorPools"
        )

    def test_two_workloads_too_many_for_the_pool(self):
        chat = with_gpus(deployment("nvidia", 2, NVIDIA_IMAGE), 3)
        embedder = with_gpus(copy.deepcopy(chat), 1)
        embedder["metadata"]["name"] = "embedder-blue"
        embedder["spec"]["replicas"] = 1
        config = {
            "poolSizes": {"nvidia": {"nodes": 2, "acceleratorsPerNode": 5}, "ascend": {"nodes": 2}}
        }
        assert stack_reports("pool-capacity", [chat, embedder], config) == [
            (
                "pool 'nvidia' is too small: a rollout takes up to 11 nvidia.com/gpu (Deployment "
                "inference/inference-blue: (2 replicas + maxSurge 1 (default 25%)) x 3; "
                "Deployment inference/embedder-blue: (1 replicas + maxSurge 1 (default 25%)) x 1) "
                "but the pool has 10 (2 nodes x 5 acceleratorsPerNode), so pods would stay "
                "Pending; run fewer pods (capacity.totalReplicas, or a lower weight for Ascend) "
                "or add nodes to the pool (<backend>.pool.nodes; <backend>.pool.acceleratorsPerNode"
                " if its nodes hold more)",
                None,
            )
        ]


class TestDaemonSetsNodeByNode:
    """A DaemonSet's pods take their accelerators on every node of the pool first; the rest
    packs into what is left on each node (`_fits_node_by_node`). The pool is 2 nodes x 5 GPUs,
    so every stack below fits in total (10) and only the node-by-node packing decides."""

    CONFIG: ClassVar[dict] = {
        "poolSizes": {"nvidia": {"nodes": 2, "acceleratorsPerNode": 5}, "ascend": {"nodes": 2}}
    }

    def agent(self, gpus, **spec):
        return side_workload("DaemonSet", accelerators=gpus, **spec)

    def test_pods_that_fit_beside_the_daemonset_pass(self):
        """2 GPUs per node for the agent leave 3: one 3-GPU pod on each node."""
        chat = with_gpus(deployment("nvidia", 1, NVIDIA_IMAGE), 3)  # 1 + surge 1 = 2 pods
        assert pools([chat, self.agent(2)], self.CONFIG) == []

    def test_pods_that_only_fit_where_the_daemonset_runs_fail(self):
        """3 free GPUs per node take one 2-GPU pod each: the third (the surge) stays Pending,
        although 4 + 6 = 10 GPUs fit the pool in total."""
        chat = with_gpus(deployment("nvidia", 2, NVIDIA_IMAGE), 2)  # 2 + surge 1 = 3 pods
        assert stack_reports("pool-capacity", [chat, self.agent(2)], self.CONFIG) == [
            (
                "pool 'nvidia' cannot place its pods node by node: a rollout takes up to 10 "
                "nvidia.com/gpu (Deployment inference/inference-blue: (2 replicas + maxSurge 1 "
                "(default 25%)) x 2; DaemonSet batch/side-daemonset: (2 nodes) x 2), within the "
                "pool's 10, " + TestPoolCapacityMessages.NODE_BY_NODE.format(nodes=2),
                None,
            )
        ]

    def test_a_daemonset_taking_every_accelerator_of_each_node_passes(self):
        assert pools([self.agent(5)], self.CONFIG) == []

    def test_a_daemonset_surge_pod_packs_like_the_rest(self):
        """maxSurge 50% of 2 nodes is one more pod, placed beside a running one: with 2 GPUs
        per pod it fits the 3 left on a node, with 3 it does not fit the 2 left."""
        surge = {"updateStrategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}}}
        assert pools([self.agent(2, **surge)], self.CONFIG) == []
        [message] = pools([self.agent(3, **surge)], self.CONFIG)
        assert message.startswith(
            "pool 'nvidia' cannot place its pods node by node: a rollout takes up to 9 "
            "nvidia.com/gpu (DaemonSet batch/side-daemonset: (2 nodes + maxSurge 1) x 3)"
        )

    def test_a_daemonset_larger_than_a_node_never_fits(self):
        """Unreachable from the policy (its total exceeds the pool first), but the packing
        itself must not call it placed."""
        agent = item(self.agent(6))
        assert not _fits_node_by_node([(agent, PodCount(2, "2 nodes"), 6)], PoolSize(2, 5))
        assert _fits_node_by_node([(agent, PodCount(2, "2 nodes"), 5)], PoolSize(2, 5))
