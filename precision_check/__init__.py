"""The precision check: send the same prompts to the NVIDIA and the Ascend backend, compare.

Standard library only, and only relative imports: the Kubernetes Job runs this very package
in a stock Python image (`python:3.12.7-slim-bookworm`) from a ConfigMap (`python3 -m
precision_check ...`), and `dualstack precision-check` runs it locally. Each backend is the
base URL of an OpenAI-compatible server (`/v1/completions` or `/v1/chat/completions`), called
with `temperature: 0`, a fixed `max_tokens` and a `seed`.

- `options`   the run's settings (`Options`) and their defaults
- `prompts`   prompt files (JSON lines, YAML list), the built-in sets `prompts.jsonl` and
              `accuracy.jsonl` (with reference answers)
- `backend`   one server: request body, retries, timeouts
- `shapes`    reading an answer: text, tokens, logprobs, top alternatives
- `compare`   exact / prefix / logprobs / topk comparison of two answers
- `accuracy`  scoring against reference answers, Wilson and Newcombe 95 % intervals
- `run`       the concurrent run (`run_check`), the same-hardware baseline, the scoring
- `report`    the outcome (`Report`), its verdict and reasons, the JSON report
- `output`    the human summary and the Pushgateway metrics; `markdown` the Markdown report
- `cli`       the flags and `main`
- `numbers`   the one strict reading of numeric flags; `servers` which server a URL reaches
- `limits`    bounded reads: a deadline per HTTP request, size caps, JSON depth, regular files
- `redaction` secrets never printed (URL userinfo, tokens in a backend's answer)

Exit codes: 0 pass, 1 mismatch over the threshold (or, in accuracy mode, inconclusive), 2
could not complete (bad input, backend errors, timeouts, malformed JSON, an empty answer or
missing logprobs, deadline), with the cause as one `error: ...` line.
"""

from .cli import add_arguments, discard_stdout, main, options_from_args, run_cli, to_argv
from .compare import Difference, compare
from .options import DEFAULTS, EXIT_ERROR, EXIT_MISMATCH, EXIT_PASS, CheckError, Options
from .prompts import Prompt, builtin_file, load_prompts, parse_prompts, to_jsonl
from .report import Mismatch, Report
from .run import run_check

__all__ = [
    "DEFAULTS",
    "EXIT_ERROR",
    "EXIT_MISMATCH",
    "EXIT_PASS",
    "CheckError",
    "Difference",
    "Mismatch",
    "Options",
    "Prompt",
    "Report",
    "add_arguments",
    "builtin_file",
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
