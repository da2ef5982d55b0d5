"""The GitOps repo: the one git runner, stack files, base refs and change detection."""
