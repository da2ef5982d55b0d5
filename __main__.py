"""Pulumi program entry point: `pulumi preview` / `pulumi up` run this file."""

from components.stack import main

main()
