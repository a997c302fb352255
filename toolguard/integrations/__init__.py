"""Adapters for agent frameworks, each an optional extra imported lazily.

``toolguard.integrations.langchain`` (``pip install "toolguard-agents[langchain]"``),
``toolguard.integrations.mcp`` (``toolguard-agents[mcp]``), and so on. The core never
imports a framework; these modules import the core.
"""
