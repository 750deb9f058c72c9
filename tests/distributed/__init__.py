"""The distributed group: a package, so that its stack is package-scoped (stopped after the group)."""
