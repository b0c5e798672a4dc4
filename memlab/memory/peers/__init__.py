"""Peer memory libraries as memory conditions: ``mem0`` (mem0ai), ``langmem`` (LangMem) and
``graphiti`` (graphiti-core on embedded Kuzu; ``pip install -e ".[graphiti]"``).

Each runs on memlab's own model (mem0 and LangMem through a LangChain chat model, graphiti
through its LLMClient, both over memlab's LLM layer, so every call is cached, journaled and
replayed), memlab's own embedder, suites and scorers. Install mem0 and LangMem with
``pip install -e ".[peers]"``.
"""
