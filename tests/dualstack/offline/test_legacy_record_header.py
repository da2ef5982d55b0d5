"""The preview's image line agrees with the policy pack on the older `verifiedAscendImage`
record (issue 28): an entry without an NVIDIA image verifies its Ascend image with the deployed
NVIDIA image only (`policies/supply_chain.py`), so a head that swaps the NVIDIA image beside
it is "NOT verified at the base" in the header and in `-o json`, as the pack refuses it.
Judged by `dualstack preview --stack prod --base main` on a real git repository.
"""

from __future__ import annotations

import json

import pytest

from tests.support.judge_repos import V123, failed_policies, make_repo, preview, write_stack

AS = V123["ascend"]
LEGACY = {"ascendWeight": "5", "verifiedAscendImage": AS}
"""A prod stack at 5 % whose only record is the older verifiedAscendImage of its Ascend image."""
VERIFIED = "precision-verified-before-promotion"


def judged(tmp_path, capsys, head: dict, *args: str) -> tuple[int, str, str]:
    repo = make_repo(tmp_path, prod=LEGACY)
    write_stack(repo, "prod", head)
    return preview(repo, capsys, *args)


@pytest.mark.parametrize(
    "nvidia",
    ["evil.example/inference-service:v1.2.3-cuda", "registry/inference-service:v1.2.3-cuda-2"],
    ids=["another registry", "another tag"],
)
def test_the_legacy_record_with_another_nvidia_image_is_not_verified(tmp_path, capsys, nvidia):
    head = {**LEGACY, "nvidia": {"image": nvidia}}
    code, out, err = judged(tmp_path, capsys, head)
    assert code == 1, err
    assert VERIFIED in failed_policies(err)
    assert f"Ascend image: {AS} (NOT verified at the base)" in out.splitlines()
    code, out, _err = preview(tmp_path / "gitops", capsys, "-o", "json")
    (stack,) = json.loads(out)["stacks"]
    assert stack["ascendImageVerified"] is False


def test_the_legacy_record_with_the_deployed_nvidia_image_is_verified(tmp_path, capsys):
    code, out, err = judged(tmp_path, capsys, {**LEGACY, "ascendWeight": "20"})
    assert (code, err) == (0, "")
    assert f"Ascend image: {AS} (precision-verified at the base)" in out.splitlines()
    code, out, _err = preview(tmp_path / "gitops", capsys, "-o", "json")
    (stack,) = json.loads(out)["stacks"]
    assert stack["ascendImageVerified"] is True
