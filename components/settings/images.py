"""Container image references: `repository[:tag][@sha256:digest]` parsing and pinning rules.

Shared by the workload settings and the precision-check settings, so neither imports the other.
"""

from __future__ import annotations

import re

from components.settings.scalars import shown

TAG_MAX = 128
"""Longest image tag (the OCI distribution spec: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`)."""

# repository[:tag][@sha256:digest]; the repository may carry a registry host and port.
_IMAGE = re.compile(
    r"^(?P<repo>[a-z0-9]+(?:[._\-/:][a-z0-9]+)*?)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?$"
)


def parse_image(image: str) -> tuple[str, str | None, str | None]:
    """Split an image reference into (repository, tag, digest).

    Example: `registry/inference-service:v1.2.3-npu` -> (`registry/inference-service`,
    `v1.2.3-npu`, None). Raises ValueError when the reference is malformed.
    """
    last = image.partition("@")[0].rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if len(tag) > TAG_MAX:
        raise ValueError(
            f"the tag is {len(tag)} characters; a tag is at most {TAG_MAX} letters, digits, "
            "'_', '.' and '-'"
        )
    match = _IMAGE.match(image)
    if not match:
        raise ValueError(
            f"{shown(image)} is not an image reference (repository[:tag][@sha256:digest])"
        )
    return match["repo"], match["tag"], match["digest"]


def pinned_image(image: str) -> str:
    _repo, tag, digest = parse_image(image)
    if tag is None and digest is None:
        raise ValueError(f"no tag or digest; pin it, e.g. {shown(image, 80)[1:-1]}:v1.2.3")
    if tag == "latest" and digest is None:
        raise ValueError("the moving tag 'latest' is not allowed; pin a release tag")
    return image
