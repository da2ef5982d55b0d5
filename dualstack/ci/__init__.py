"""Pipeline helpers: the PR report and the GitLab merge-request note."""
