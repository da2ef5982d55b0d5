"""The precision check: send the same prompts to the NVIDIA and the Ascend backend, compare.

Standard library only, and only relative imports: the Kubernetes Job runs this very package
in a stock Python image (`python:3.12.7-slim-bookworm`) from a ConfigMap (`python3 -m
precision_check ...`), and `dualstack precision-check` runs it locally. Each backend is the
base URL of an OpenAI-compatible server (`/v1/completions` or `/v1/chat/completions`), called
with `temperature: 0`, a fixed `max_tokens` and a `seed`.

- `options`  the run's settings (`Options`) and their defaults
- `prompts`  prompt files (JSON lines, YAML list) and the built-in set `prompts.jsonl`
- `backend`  one server: request body, answer parsing, retries, timeouts
- `compare`  exact / prefix / logprobs comparison and the concurrent run (`run_check`)
- `output`   the human summary and the Pushgateway metrics
- `cli`      the flags and `main`

Exit codes: 0 pass, 1 mismatch over the threshold, 2 could not complete (bad input, backend
errors, timeouts, malformed JSON or an empty answer, deadline), with the cause as one
`error: ...` line.
"""

from .cli import add_arguments, discard_stdout, main, options_from_args, run_cli, to_argv
from .compare import Mismatch, Report, compare, run_check
from .options import DEFAULTS, EXIT_ERROR, EXIT_MISMATCH, EXIT_PASS, CheckError, Options
from .prompts import Prompt, load_prompts, parse_prompts, to_jsonl

__all__ = [
    "DEFAULTS",
    "EXIT_ERROR",
    "EXIT_MISMATCH",
    "EXIT_PASS",
    "CheckError",
    "Mismatch",
    "Options",
    "Prompt",
    "Report",
    "add_arguments",
    "compare",
    "discard_stdout",
    "load_prompts",
    "main",
    "options_from_args",
    "parse_prompts",
    "run_check",
    "run_cli",
    "to_argv",
    "to_jsonl",
]
