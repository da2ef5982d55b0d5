"""Names of the series the monitoring rules record and the gate and dashboard read.

Prometheus's `level:metric:operations` naming convention
(prometheus.io/docs/practices/rules/). Every recorded series carries the static label
`hardware` (`nvidia` | `ascend`) and `namespace` (the stack's namespace).
"""

REQUEST_RATE = "hardware:inference_requests:rate5m"
"""Requests per second, per hardware."""
ERROR_RATIO = "hardware:inference_request_errors:ratio_rate5m"
"""5xx responses / all responses (0..1), per hardware; absent (not 0) without traffic."""
LATENCY_P50 = "hardware:inference_request_duration_seconds:p50_5m"
"""Median request latency in seconds, per hardware."""
LATENCY_P99 = "hardware:inference_request_duration_seconds:p99_5m"
"""99th percentile request latency in seconds, per hardware."""
ASCEND_SHARE = "namespace:inference_requests_ascend:ratio_rate5m"
"""Share of requests actually served by Ascend (0..1): migration progress."""
PRECISION_PASSED = "precision_check_passed"
"""Pushed by the precision check to the Pushgateway: 1 pass, 0 fail; label `ascend_image`."""
PRECISION_COMPLETED = "precision_check_completed"
"""Pushed by the precision check: 1 when both backends answered every prompt, 0 when it could
not complete (errors, timeouts, deadline); label `ascend_image`."""
PRECISION_MATCH_RATIO = "precision_check_match_ratio"
"""Pushed by the precision check: prompts answered alike / all prompts (0..1)."""
PRECISION_MISMATCHES = "precision_check_mismatches"
"""Pushed by the precision check: prompts answered differently."""
PRECISION_PROMPTS = "precision_check_prompts"
"""Pushed by the precision check: prompts sent to each backend."""
PRECISION_DURATION = "precision_check_duration_seconds"
"""Pushed by the precision check: wall time of the check, seconds."""
