"""dualstack: the workflow tooling of the GitOps repo (render, preview, policies, gate, ...)."""

__version__ = "0.1.0"
