"""Unified monitoring: DCGM and npu-exporter metrics under one name, per-hardware error rate,
latency and accelerator-hours, alerts and a dashboard.

- `component`: the `UnifiedMonitoring` ComponentResource (PrometheusRule + dashboard ConfigMap);
- `prometheus_rule`: the rule groups as one PrometheusRule spec;
- `rules`, `accelerators`, `alerts`: recording rules, accelerator rules, alerting rules;
- `dashboard`: the Grafana dashboard; `promql`: the one PromQL text builder;
- `metric_names`: the recorded series' names, the single definition the gate reads.

This package imports no Pulumi itself, so the gate can read `metric_names` cheaply.
"""
