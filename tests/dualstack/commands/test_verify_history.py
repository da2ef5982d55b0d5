"""`dualstack verify-precision` keeps the verification history: each passing pair is appended
once, so an earlier verified pair stays available for an image rollback."""

from __future__ import annotations

from dualstack.cli import main
from dualstack.repo.stackfile import read_config, set_config_values
from tests.support.judge_repos import V123, V124, make_repo
from tests.support.precision_servers import OpenAIServer

HISTORY = "dualstack-inference:verifiedImages"
FAST = ["--backoff", "0.01", "--timeout", "5", "--deadline", "20"]


def verify(repo, capsys) -> tuple[int, str]:
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        argv = ["verify-precision", "--stack", "prod", "--nvidia", nvidia.url]
        code = main(["-C", str(repo), *argv, "--ascend", ascend.url, *FAST])
    return code, capsys.readouterr().out


def test_a_new_pair_is_appended_and_a_known_one_not_repeated(tmp_path, capsys):
    repo = make_repo(tmp_path)
    set_config_values(repo, "prod", {"nvidia": {"image": V124["nvidia"]}})
    set_config_values(repo, "prod", {"ascend": {"image": V124["ascend"]}})
    code, out = verify(repo, capsys)
    assert code == 0
    assert f"verifiedImages: {V124['nvidia']} + {V124['ascend']} added (2 pairs)" in out
    assert read_config(repo, "prod")[HISTORY] == [V123, V124]
    code, out = verify(repo, capsys)
    assert code == 0
    assert "already recorded" in out
    assert read_config(repo, "prod")[HISTORY] == [V123, V124]


def test_the_first_record_starts_the_history(tmp_path, capsys):
    repo = make_repo(tmp_path, prod={"ascendWeight": "0"})
    assert verify(repo, capsys)[0] == 0
    config = read_config(repo, "prod")
    assert config[HISTORY] == [V123]
    assert config["dualstack-inference:verifiedAscendImage"] == V123["ascend"]
