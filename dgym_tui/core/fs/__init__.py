"""The working copy and patches: copy, path policy, safe file access, change index, git patches."""
