"""What memlab ships for testing memories, its own and a plugin's (docs/plugins.md).

``memlab.testing.contract``: the MemorySystem contract as checks and a pytest base class,
``MemoryContract``. ``memlab.testing.fakes``: a FakeLLM that plays memlab's memory roles.
"""
