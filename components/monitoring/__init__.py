"""Unified monitoring: DCGM and npu-exporter metrics under one name, per-hardware error rate,
latency and accelerator-hours, alerts and a dashboard.

- `component`: the manifests of the PrometheusRule and the dashboard ConfigMap (registered by
  `components.resources.UnifiedMonitoring`);
- `prometheus_rule`: the rule groups as one PrometheusRule spec;
- `rules`, `accelerators`, `alerts`: recording rules, accelerator rules, alerting rules;
- `dashboard`: the Grafana dashboard; `promql`: the one PromQL text builder;
- `metric_names`: the recorded series' names, the single definition the gate reads.

This package imports no Pulumi, so the gate and the offline render read it cheaply.
"""
