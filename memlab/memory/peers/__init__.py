"""Peer memory libraries as memory conditions: ``mem0`` (mem0ai) and ``langmem`` (LangMem).

Each runs on memlab's own model (a LangChain chat model over memlab's LLM layer, so every call
is cached, journaled and replayed), memlab's own embedder, suites and scorers. Install with
``pip install -e ".[peers]"``.
"""
