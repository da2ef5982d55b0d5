"""Run the pipelines' shell steps locally: enough of GitHub Actions and GitLab CI to execute
a job's `run:` / `script:` in bash, in order, with their `if:` / `rules:` evaluated.

What is emulated: expressions over the contexts a test passes (`github`, `secrets`, `vars`,
`inputs`, `matrix`, `needs`) plus `env` and `steps.<id>.outputs/outcome`; the status
functions; `$GITHUB_OUTPUT`, `$GITHUB_ENV`, `$GITHUB_PATH`, `$GITHUB_STEP_SUMMARY`; tools
named by absolute path (`/usr/bin/gh`) swapped for a test's stub (`tools`); GitLab `extends`,
variables (expanded), `rules: if` and the runner's `set -eo pipefail`. What is not: `uses:`
steps (recorded as skipped; the test provides their effect, e.g. tools on PATH).
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import git
from tests.pipelines.pipeline_stubs import install_stubs, make_gitops
from tests.support.judge_repos import PROD, STAGING, write_stack

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
GITLAB_CI = REPO / ".gitlab-ci.yml"
GITLAB_JUDGE = REPO / ".gitlab" / "judge.yml"
TIMEOUT_SECONDS = 120


def load_yaml(path: Path) -> dict[str, Any]:
    """A pipeline file as plain data; GitHub's `on:` key stays the string "on"."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping")
    return data


class _Loader(yaml.SafeLoader):
    """SafeLoader without YAML 1.1 booleans on/off/yes/no (GitHub reads `on` as a key)."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"))

# ---------------------------------------------------------------- GitHub expressions

_GH_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[\w-]+|\[[^\]]+\])*))"
)


def _lookup(ctx: Mapping[str, Any], dotted: str) -> Any:
    node: Any = ctx
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return "" if node is None else node


def github_eval(expr: str, ctx: Mapping[str, Any], failed: bool = False) -> Any:
    """Evaluate a GitHub expression (without `${{ }}`) over `ctx`.

    Supports literals, context paths, == != && || ! ( ), format(), fromJSON(), toJSON(),
    success(), failure(), always(), cancelled() (never cancelled here).
    """
    import json

    out: list[str] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        match = _GH_TOKEN.match(expr, pos)
        if not match or match.end() == pos:
            raise ValueError(f"cannot parse expression at {expr[pos:]!r}")
        pos = match.end()
        if match["str"] is not None:
            out.append(repr(match["str"][1:-1].replace("''", "'")))
        elif match["num"] is not None:
            out.append(match["num"])
        elif match["op"] is not None:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(match["op"], match["op"]))
        elif expr[pos:].lstrip().startswith("("):
            out.append(f"_fn_{match['name']}")
        elif match["name"] in ("true", "false", "null"):
            out.append({"true": "True", "false": "False", "null": "None"}[match["name"]])
        else:
            out.append(f"_get({match['name']!r})")

    def fmt(template: str, *args: Any) -> str:
        return re.sub(r"\{(\d+)\}", lambda m: str(args[int(m[1])]), template)

    names = {
        "_get": lambda dotted: _lookup(ctx, dotted),
        "_fn_format": fmt,
        "_fn_fromJSON": json.loads,
        "_fn_toJSON": json.dumps,
        "_fn_success": lambda: not failed,
        "_fn_failure": lambda: failed,
        "_fn_always": lambda: True,
        "_fn_cancelled": lambda: False,
    }
    return eval("".join(out), {"__builtins__": {}}, names)


def github_if(condition: Any, ctx: Mapping[str, Any], failed: bool) -> bool:
    """A step or job `if:`; without a status function it means `success() && (...)`."""
    if condition in (None, ""):
        return not failed
    text = str(condition).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    result = bool(github_eval(text, ctx, failed))
    if not re.search(r"\b(success|failure|always|cancelled)\(", text):
        result = result and not failed
    return result


def interpolate(value: Any, ctx: Mapping[str, Any]) -> str:
    """A string with every `${{ expr }}` replaced by its value."""

    def one(match: re.Match[str]) -> str:
        result = github_eval(match[1], ctx)
        return str(result).lower() if isinstance(result, bool) else str(result)

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


@dataclass
class StepRun:
    """One step: whether it ran, its exit code and output (None/"" when skipped)."""

    name: str
    ran: bool
    rc: int | None = None
    output: str = ""


def _bash(script: str, env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )


def _read_kv(path: Path) -> dict[str, str]:
    pairs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            pairs[key] = value
    return pairs


def run_github_job(
    workflow: Mapping[str, Any],
    job_id: str,
    contexts: Mapping[str, Any],
    cwd: Path,
    base_env: Mapping[str, str],
    skip_steps: tuple[str, ...] = ("Install",),
    tools: Mapping[str, str] | None = None,
) -> tuple[list[StepRun], dict[str, Any]]:
    """Run `job_id`'s steps in `cwd`. `contexts`: github, runner, secrets, vars, inputs,
    matrix, needs (a `runner.temp` the job names must be given: "" would be the root).

    Returns the step runs and the job's evaluated `outputs`. Steps named in `skip_steps`
    (environment set-up the test replaces) and `uses:` steps are recorded, not run. `tools`:
    {absolute path the job names, e.g. /usr/bin/gh: the stub to run instead}.
    """
    job = workflow["jobs"][job_id]
    ctx: dict[str, Any] = {**copy.deepcopy(dict(contexts)), "steps": {}, "env": {}}
    for scope in (workflow.get("env") or {}, job.get("env") or {}):
        for key, value in scope.items():
            ctx["env"][key] = interpolate(value, ctx)
    path_entries: list[str] = []
    failed = False
    runs: list[StepRun] = []
    tmp = cwd / ".harness"
    tmp.mkdir(exist_ok=True)
    for index, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or f"step {index}"
        if "runner.temp" in str(step) and not _lookup(ctx, "runner.temp"):
            raise AssertionError(f"step {name!r} names runner.temp: pass contexts['runner']")
        step_ctx = {**ctx, "env": {**ctx["env"]}}
        for key, value in (step.get("env") or {}).items():
            step_ctx["env"][key] = interpolate(value, step_ctx)
        if not github_if(step.get("if"), step_ctx, failed):
            runs.append(StepRun(name, False))
            _record(ctx, step, "skipped", {})
            continue
        if "uses" in step or name in skip_steps:
            runs.append(StepRun(name, False))
            _record(ctx, step, "success", {})
            continue
        script = step["run"]
        if "${{" in script:
            raise AssertionError(f"step {name!r}: expressions belong in env:, not in run:")
        script = swap_tools(script, tools)
        files = {k: tmp / f"{k}-{index}" for k in ("OUTPUT", "ENV", "PATH", "STEP_SUMMARY")}
        for file in files.values():
            file.write_text("", encoding="utf-8")
        env = {**base_env, **{k: swap_tools(v, tools) for k, v in step_ctx["env"].items()}}
        env["PATH"] = os.pathsep.join([*reversed(path_entries), base_env["PATH"]])
        env.update({f"GITHUB_{k}": str(v) for k, v in files.items()})
        done = _bash(script, env, cwd)
        path_entries += files["PATH"].read_text(encoding="utf-8").split()
        ctx["env"].update(_read_kv(files["ENV"]))
        runs.append(StepRun(name, True, done.returncode, done.stdout + done.stderr))
        outcome = "success" if done.returncode == 0 else "failure"
        _record(ctx, step, outcome, _read_kv(files["OUTPUT"]))
        failed = failed or done.returncode != 0
    outputs = {key: interpolate(value, ctx) for key, value in (job.get("outputs") or {}).items()}
    return runs, outputs


def swap_tools(text: str, tools: Mapping[str, str] | None) -> str:
    """`text` with each absolute tool path of `tools` replaced by its stub."""
    for real, stub in (tools or {}).items():
        text = re.sub(rf"(?<![\w/.-]){re.escape(real)}(?![\w/.-])", stub, text)
    return text


def _record(ctx: dict[str, Any], step: Mapping[str, Any], outcome: str, outputs: dict) -> None:
    if "id" in step:
        ctx["steps"][step["id"]] = {"outcome": outcome, "conclusion": outcome, "outputs": outputs}


# ---------------------------------------------------------------- GitLab CI

_GL_TOKEN = re.compile(
    r'\s*(?:(?P<str>"[^"]*"|\'[^\']*\')|(?P<op>==|!=|&&|\|\||\(|\))|\$(?P<var>\w+))'
)


def gitlab_eval(expr: str, variables: Mapping[str, str]) -> bool:
    """A `rules: if` expression: $VAR, "string", == != && || ( ). An unset or empty
    variable alone is false; compared, an unset variable is null."""
    out, pos = [], 0
    while pos < len(expr.strip()):
        match = _GL_TOKEN.match(expr.strip(), pos)
        if not match:
            raise ValueError(f"cannot parse rule at {expr.strip()[pos:]!r}")
        pos = match.end()
        if match["str"] is not None:
            out.append(repr(match["str"][1:-1]))
        elif match["var"] is not None:
            out.append(f"_v({match['var']!r})")
        else:
            out.append({"&&": " and ", "||": " or "}.get(match["op"], match["op"]))
    source = "".join(out)
    value = eval(source, {"__builtins__": {}}, {"_v": variables.get})
    return bool(value)


def gitlab_job(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Job `name` with `extends` resolved (hashes merged deeply, other keys replaced)."""
    job = config[name]
    parents = job.get("extends", [])
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents:
        merged = _deep_merge(merged, gitlab_job(config, parent))
    merged = _deep_merge(merged, {k: v for k, v in job.items() if k != "extends"})
    return merged


def _deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def expand(value: str, variables: Mapping[str, str]) -> str:
    """GitLab's expansion of `$VAR` / `${VAR}` in a variable's value (unset: empty)."""
    return re.sub(r"\$(?:\{(\w+)\}|(\w+))", lambda m: variables.get(m[1] or m[2], ""), str(value))


def gitlab_variables(
    config: Mapping[str, Any], job: Mapping[str, Any], ci: Mapping[str, str]
) -> dict[str, str]:
    """Predefined/project variables `ci`, then the file's, then the job's, expanded."""
    variables = dict(ci)
    for scope in (config.get("variables") or {}, job.get("variables") or {}):
        for key, value in scope.items():
            if key in ci:  # project and trigger variables override the file's
                continue
            raw = value.get("value", "") if isinstance(value, Mapping) else value
            variables[key] = expand(raw, variables)
    return variables


def gitlab_rule(job: Mapping[str, Any], variables: Mapping[str, str]) -> str | None:
    """`when` of the first matching rule (default on_success); None when no rule matches."""
    rules = job.get("rules")
    if rules is None:
        return job.get("when", "on_success")
    for rule in rules:
        if "if" not in rule or gitlab_eval(rule["if"], variables):
            return rule.get("when", "on_success")
    return None


def run_gitlab_job(
    config: Mapping[str, Any],
    name: str,
    ci: Mapping[str, str],
    cwd: Path,
    base_env: Mapping[str, str],
    skip_before_script: bool = True,
    tools: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run job `name`'s script like the runner: one bash, `set -eo pipefail`, variables in
    the environment. `before_script` (install steps the test replaces) is dropped unless
    `skip_before_script` is False. `tools` as for `run_github_job`."""
    job = gitlab_job(config, name)
    variables = {k: swap_tools(v, tools) for k, v in gitlab_variables(config, job, ci).items()}
    lines = [] if skip_before_script else list(job.get("before_script") or [])
    lines += list(job["script"])
    env = {**base_env, **variables}
    done = _bash(swap_tools("\n".join(lines), tools), env, cwd)
    if job.get("after_script"):  # a shell of its own, told how the job ended
        status = "success" if done.returncode == 0 else "failed"
        after = _bash(
            swap_tools("\n".join(job["after_script"]), tools), {**env, "CI_JOB_STATUS": status}, cwd
        )
        done.stdout += after.stdout
        done.stderr += after.stderr
    return done


# ---------------------------------------------------------------- the world a job runs in


def fixture_stacks(clone: Path, prod: Mapping[str, Any] | None = None) -> None:
    """Replace the copied stack files by the judge's fixtures (prod at 5 with the v1.2.3 pair
    verified, or `prod`; staging at 20) on main, pushed: nothing here reads the committed
    values."""
    write_stack(clone, "prod", dict(PROD if prod is None else prod))
    write_stack(clone, "staging", STAGING)
    git(clone, "commit", "-qam", "fixture stacks")
    git(clone, "push", "-q", "origin", "main")
    git(clone, "fetch", "-q", "origin")


def gitops_world(
    tmp: Path, *, fixtures: bool = False, prod: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What a pipeline test runs a job in, under `tmp`: `repo`, a clone of the bare `origin`
    holding this tree's code and the fixture stack files on main (`make_gitops`: prod at 5,
    staging at 20); the stubs first on PATH (`install_stubs`); `log`, where they record their
    calls; and `env`, the job's environment. With `fixtures` (or a `prod` config) main's stack
    files are the judge's fixtures instead (`fixture_stacks`)."""
    clone, origin = make_gitops(tmp)
    if fixtures or prod is not None:
        fixture_stacks(clone, prod)
    install_stubs(tmp / "bin")
    log = tmp / "calls.jsonl"
    env = {
        "PATH": os.pathsep.join([str(tmp / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(tmp),
        "STUB_LOG": str(log),
        "STUB_BIN": str(tmp / "bin"),
        "LANG": "C.UTF-8",
    }
    return {"repo": clone, "origin": origin, "log": log, "env": env}
