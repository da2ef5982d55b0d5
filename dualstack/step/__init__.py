"""One migration step: weight edits, PR text, publishing on a branch, emergency targets."""
