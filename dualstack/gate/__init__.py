"""The promotion gate: criteria, data bounds, the report and the Prometheus client."""
