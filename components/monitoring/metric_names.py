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

# Accelerators, per hardware, for the devices assigned to the stack's namespace.
ACCELERATOR_UTILISATION = "hardware:accelerator_utilization_percent:avg"
"""Mean accelerator utilisation in % (0..100), per hardware."""
ACCELERATOR_MEMORY_USED = "hardware:accelerator_memory_used_percent:ratio"
"""Device memory used in % of device memory (sum used / sum total), per hardware."""
ACCELERATOR_TEMPERATURE = "hardware:accelerator_temperature_celsius:max"
"""Hottest accelerator's temperature in °C, per hardware."""
ACCELERATOR_POWER = "hardware:accelerator_power_watts:sum"
"""Total power draw of the accelerators in W, per hardware."""
ACCELERATORS = "hardware:accelerators:count"
"""Accelerators assigned to the namespace's pods right now (0 when none), per hardware."""
ACCELERATOR_HOURS = "hardware:accelerator_hours:sum24h"
"""Accelerator-hours used over the last 24 h (assigned devices x hours), per hardware."""

# Cost, recorded for a hardware only when prices are configured for it.
ACCELERATOR_COST_PER_HOUR_BY_MODEL = "hardware_model:accelerator_cost_per_hour:sum"
"""Cost per hour of the assigned accelerators of one priced model (label `model`)."""
ACCELERATOR_COST_PER_HOUR = "hardware:accelerator_cost_per_hour:sum"
"""Cost per hour of the assigned, priced accelerators, per hardware (configured currency)."""
ACCELERATOR_COST = "hardware:accelerator_cost:sum24h"
"""Cost of the priced accelerators over the last 24 h, per hardware (configured currency)."""

ASCEND_WEIGHT = "namespace:inference_ascend_weight:ratio"
"""The configured Ascend route weight as a ratio (0..1), to compare with ASCEND_SHARE."""
ASCEND_MIRROR = "namespace:inference_ascend_mirror:ratio"
"""The configured share of requests mirrored to Ascend (0..1; `mirrorPercent`, at weight 0 only):
with ASCEND_WEIGHT, the rung the traffic data was taken at."""
