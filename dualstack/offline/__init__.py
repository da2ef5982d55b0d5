"""The offline preview: render under Pulumi mocks, schema-check, diff, run the policy pack."""
