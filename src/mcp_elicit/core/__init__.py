"""The sans-I/O core: pure decisions about forms, answers, URLs, secrets, policy and consent.

Nothing under this package may import a module that does I/O (mcp, anyio, sockets, files,
terminals, clocks); tests/core/test_purity.py checks that in a fresh interpreter.
"""
