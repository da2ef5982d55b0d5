"""Entry point of the policy pack: `pulumi preview --policy-pack policies` runs this file.

The analyzer runs it by path from inside `policies/`, so the repository root is put on
`sys.path` first to import the validators as the `policies` package.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pulumi_policy import EnforcementLevel, PolicyPack

from policies import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=list(POLICIES), enforcement_level=EnforcementLevel.MANDATORY)
