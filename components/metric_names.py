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
