"""LLM access: llm.yaml entries, completion calls (the only litellm importer), reply parsing."""
