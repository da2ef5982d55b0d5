"""Red team (issue 28): pull requests that control only their own content, judged by the base.

Each case is a base commit (fixture prod stack, `tests.support.judge_repos`) and a head that
rewrites files in the working tree; `dualstack preview --stack prod --base main` (in-process:
the base holds this tree's code) must refuse every unsafe change (exit 1, a policy; or 2, the
stack file cannot be read, which fails closed) and pass every legitimate step (exit 0).
`first` is a piece of the first line the refusal prints on stderr (the policies, or the key),
so a case refused for another reason than the one it attacks fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from components.settings import PROJECT
from tests.support.judge_repos import V123, commit, make_repo, preview

P = f"{PROJECT}:"
NV, AS = V123["nvidia"], V123["ascend"]
EVIL = "evil.example/inference-service:v1.2.3-cuda"
PAIR = f"  {P}verifiedImages:\n    - {{nvidia: {NV}, ascend: {AS}}}\n"
SP = "Pulumi.prod.yaml"
JUMP = "no-unsafe-weight-jump"
ENVELOPE = "safety-envelope-unchanged"
VERIFIED = "precision-verified-before-promotion"
DECIMAL = "expected a whole number in plain decimal digits"


def prod(weight: object, extra: str = "", quote: bool = True) -> str:
    """A prod stack file at `weight` (quoted unless `quote` is false), the v1.2.3 pair
    verified, plus `extra` lines under `config`."""
    value = f'"{weight}"' if quote else weight
    return f"config:\n  {P}ascendWeight: {value}\n{PAIR}{extra}"


def fleet(*members: tuple[str, int]) -> str:
    """A prod fleet stack file: each (service, weight) serving and verified with v1.2.3."""
    text = f"config:\n  {P}services:\n"
    for name, weight in members:
        text += (
            f"    {name}:\n      ascendWeight: {weight}\n"
            f"      nvidia:\n        image: {NV}\n      ascend:\n        image: {AS}\n"
            f"      verifiedImages:\n        - {{nvidia: {NV}, ascend: {AS}}}\n"
        )
    return text


Edit = Callable[[Path], None]


def write(path: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        file = repo / path
        file.parent.mkdir(parents=True, exist_ok=True)
        if file.is_symlink():
            file.unlink()
        file.write_text(text, encoding="utf-8", newline="")

    return edit


def append(path: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        with (repo / path).open("a", encoding="utf-8") as file:
            file.write(text)

    return edit


def symlink(path: str, target: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        write(target, text)(repo)
        (repo / path).unlink()
        os.symlink(target, repo / path)

    return edit


def both(*edits: Edit) -> Edit:
    def edit(repo: Path) -> None:
        for one in edits:
            one(repo)

    return edit


class Case(NamedTuple):
    name: str
    head: Edit
    code: int  # the exit code: 0 passes, 1 a policy refuses, 2 the head cannot be read
    first: str = ""  # a piece of stderr's first line ("" when it passes)
    base: str | None = None  # the prod stack file committed on main first (None: the fixture)
    args: tuple[str, ...] = ()


UNSAFE = [
    Case("skip a rung 5->50", write(SP, prod(50)), 1, JUMP),
    Case("5->100", write(SP, prod(100)), 1, JUMP),
    Case(
        "two fleet members raised",
        write(SP, fleet(("chat", 5), ("embed", 50))),
        1,
        "one-service-raised",
        base=fleet(("chat", 0), ("embed", 20)),
    ),
    Case("raise plus mirror", write(SP, prod(20, f"  {P}mirrorPercent: 10\n")), 2, "mirrorPercent"),
    Case(
        "mirror at 0 unapproved",
        write(SP, prod(0, f"  {P}mirrorPercent: 50\n")),
        1,
        ENVELOPE,
        base=prod(0),
    ),
    Case("leading zero 020", write(SP, prod("020", quote=False)), 2, DECIMAL),
    Case("hex 0x14", write(SP, prod("0x14", quote=False)), 2, DECIMAL),
    Case("octal 0o24", write(SP, prod("0o24", quote=False)), 2, DECIMAL),
    Case("underscore 2_0", write(SP, prod("2_0", quote=False)), 2, DECIMAL),
    Case("!!int tag on a jump", write(SP, prod('!!int "50"', quote=False)), 1, JUMP),
    Case("float 5e1", write(SP, prod("5e1", quote=False)), 2, "expected a whole number"),
    Case(
        "duplicate ascendWeight",
        write(SP, prod(5, f'  {P}ascendWeight: "50"\n')),
        2,
        "duplicate key",
    ),
    Case(
        "a second document",
        write(SP, prod(5) + f'---\nconfig:\n  {P}ascendWeight: "100"\n'),
        2,
        "another document",
    ),
    Case(
        "merge key sets totalReplicas 1",
        write(SP, prod(5, f"  {P}capacity:\n    <<: {{totalReplicas: 1}}\n")),
        1,
        ENVELOPE,
    ),
    Case(
        "merge key swaps the NVIDIA image",
        write(SP, prod(5, f"  {P}nvidia:\n    <<: {{image: {EVIL}}}\n")),
        1,
        VERIFIED,
    ),
    Case("CRLF jump", write(SP, prod(50).replace("\n", "\r\n")), 1, JUMP),
    Case("BOM jump", write(SP, "\ufeff" + prod(50)), 1, JUMP),
    Case(
        "legacy key form ns:config:key",
        write(SP, prod(5, f'  {P}config:ascendWeight: "100"\n')),
        2,
        "unknown key",
    ),
    Case("key case variant", write(SP, prod(5, f'  {P}AscendWeight: "100"\n')), 2, "unknown key"),
    Case(
        "top-level ESC environment",
        write(SP, prod(5) + "environment:\n  - evil/override\n"),
        1,
        ENVELOPE,
    ),
    Case("Pulumi.prod.yml beside", write("Pulumi.prod.yml", prod(100)), 1, ENVELOPE),
    Case(
        "stack file as a symlink",
        symlink(SP, "docs/prod-stack.yaml", prod(5)),
        2,
        "not a regular file",
    ),
    Case(
        "NVIDIA image swapped on 20->5",
        write(SP, prod(5, f"  {P}nvidia:\n    image: {EVIL}\n")),
        1,
        VERIFIED,
        base=prod(20),
    ),
    Case(
        "NVIDIA image swapped at 0",
        write(SP, prod(0, f"  {P}nvidia:\n    image: {EVIL}\n")),
        1,
        VERIFIED,
        base=prod(0),
    ),
    Case(
        "NVIDIA image swapped on 80->0",
        write(SP, prod(0, f"  {P}nvidia:\n    image: {EVIL}\n")),
        1,
        VERIFIED,
        base=prod(80),
    ),
    Case(
        "unverified Ascend image on a raise",
        write(SP, prod(20, f"  {P}ascend:\n    image: registry/inference-service:v1.2.4-npu\n")),
        1,
        VERIFIED,
    ),
    Case(
        "pin on x-stainless-lang",
        write(SP, prod(5, f"  {P}testerPinning:\n    header: x-stainless-lang\n")),
        2,
        "not a project header",
    ),
    Case(
        "pin on x-stainless-lang, approved",
        write(SP, prod(5, f"  {P}testerPinning:\n    header: x-stainless-lang\n")),
        2,
        "not a project header",
        args=("--owner-approved",),
    ),
    Case(
        "pin on authorization",
        write(SP, prod(5, f"  {P}testerPinning:\n    header: authorization\n")),
        2,
        "testerPinning.header",
    ),
    Case("capacity", write(SP, prod(5, f"  {P}capacity:\n    totalReplicas: 8\n")), 1, ENVELOPE),
    Case(
        "pool nodes",
        write(SP, prod(5, f"  {P}ascend:\n    pool:\n      nodes: [ascend-01, evil]\n")),
        1,
        ENVELOPE,
    ),
    Case("namespace", write(SP, prod(5, f"  {P}namespace: other\n")), 1, ENVELOPE),
    Case("ladder", write(SP, prod(5, f"  {P}ladder: [0, 5, 100]\n")), 1, ENVELOPE),
    Case("maxStep", write(SP, prod(5, f"  {P}policy:\n    maxStep: 100\n")), 1, ENVELOPE),
    Case(
        "precision check off",
        write(SP, prod(5, f"  {P}precisionCheck:\n    enabled: false\n")),
        1,
        ENVELOPE,
    ),
    Case("SLO p99Factor", write(SP, prod(5, f"  {P}slo:\n    p99Factor: 10\n")), 1, ENVELOPE),
    Case("bakeTime 0s with a raise", write(SP, prod(20, f"  {P}bakeTime: 0s\n")), 1, ENVELOPE),
    Case("a policy module edited", append("policies/__init__.py", "\n# edited\n"), 1, ENVELOPE),
    Case("a component edited", append("components/capacity.py", "\n# edited\n"), 1, ENVELOPE),
    Case("Pulumi.yaml edited", append("Pulumi.yaml", "\n# edited\n"), 1, ENVELOPE),
    Case("a new root sitecustomize.py", write("sitecustomize.py", "import os\n"), 1, ENVELOPE),
    Case(
        "the judge edited with a jump",
        both(write(SP, prod(100)), append("dualstack/__init__.py", "\n# edited\n")),
        1,
        JUMP,
    ),
    Case("fleet conversion raising 5->50", write(SP, fleet(("inference-service", 50))), 1, JUMP),
]

LEGITIMATE = [
    Case("0->5", write(SP, prod(5)), 0, base=prod(0)),
    Case("5->20", write(SP, prod(20)), 0),
    Case("20->50", write(SP, prod(50)), 0, base=prod(20)),
    Case("50->80", write(SP, prod(80)), 0, base=prod(50)),
    Case("80->100", write(SP, prod(100)), 0, base=prod(80)),
    Case("rollback 20->5", write(SP, prod(5)), 0, base=prod(20)),
    Case("rollback 80->0", write(SP, prod(0)), 0, base=prod(80)),
    Case(
        "fleet member down",
        write(SP, fleet(("chat", 0), ("embed", 5))),
        0,
        base=fleet(("chat", 0), ("embed", 20)),
    ),
    Case(
        "fleet member one rung up",
        write(SP, fleet(("chat", 5), ("embed", 20))),
        0,
        base=fleet(("chat", 0), ("embed", 20)),
    ),
    Case("docs only", append("README.md", "\nA note.\n"), 0),
    Case("comments only", write(SP, "# prod, commented\n" + prod(5)), 0),
    Case("unquoted 20", write(SP, prod(20, quote=False)), 0),
    Case("CRLF 5->20", write(SP, prod(20).replace("\n", "\r\n")), 0),
    Case("!!str 20", write(SP, prod("!!str 20", quote=False)), 0),
    Case(
        "approved envelope change moving nothing",
        write(SP, prod(5, f"  {P}capacity:\n    totalReplicas: 6\n")),
        0,
        args=("--owner-approved",),
    ),
]


@pytest.mark.parametrize("case", UNSAFE + LEGITIMATE, ids=lambda case: case.name)
def test_the_base_judges_what_the_pull_request_wrote(tmp_path, capsys, case):
    repo = make_repo(tmp_path)
    (repo / "README.md").write_text("A gitops repo.\n", encoding="utf-8")
    if case.base is not None:
        write(SP, case.base)(repo)
    commit(repo, "the base")
    case.head(repo)
    code, _out, err = preview(repo, capsys, *case.args)
    first = err.splitlines()[0] if err else ""
    assert (code, case.first in first) == (case.code, True), first


@pytest.mark.parametrize(
    ("base", "head", "line"),
    [
        (
            prod(20),
            write(SP, prod(5, f"  {P}nvidia:\n    image: {EVIL}\n")),
            f"unchanged; the step changes ascendWeight 20 -> 5 and nvidia.image {NV} -> {EVIL}",
        ),
        (prod(5), write(SP, prod(20)), "unchanged; the step changes ascendWeight 5 -> 20"),
        (
            fleet(("chat", 0), ("embed", 20)),
            write(SP, fleet(("chat", 0), ("embed", 5))),
            "unchanged; the step changes services.embed.ascendWeight 20 -> 5",
        ),
        (
            prod(5),
            append("README.md", "\nA note.\n"),
            "unchanged, and so are the weight and images",
        ),
    ],
    ids=["20->5 swapping the NVIDIA image", "5->20", "a fleet member down", "docs only"],
)
def test_the_envelope_line_says_what_the_step_changes(tmp_path, capsys, base, head, line):
    """The envelope holds no step fact (a weight, an image: the other policies judge them), so
    an unchanged envelope says which the step changes: a decrease that swaps the image serving
    the rest of the traffic is not 'a migration step only'."""
    repo = make_repo(tmp_path)
    (repo / "README.md").write_text("A gitops repo.\n", encoding="utf-8")
    write(SP, base)(repo)
    commit(repo, "the base")
    head(repo)
    _code, out, _err = preview(repo, capsys)
    assert f"Safety envelope: {line}" in out.splitlines()
