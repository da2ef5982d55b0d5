"""One module per `dualstack` sub-command, each exposing `register(subparsers)`."""
