"""Pulumi components that build one dual-stack (NVIDIA + Ascend) inference service."""
