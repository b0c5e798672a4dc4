"""Stores: operating memory (kv, operating), vector store (vector), SQL (sql) and the sleep
system's episodic, consolidated and schema stores. Backends import lazily: import the module
you use (e.g. ``from memlab.stores.vector import ChromaVectorStore``)."""
