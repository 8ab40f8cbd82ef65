"""The sandboxed debugging environment. Imports nothing of the UI or of LLM libraries."""
