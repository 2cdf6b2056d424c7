"""One-off studies behind committed benchmark reports: read by scripts/ and tests/, never by the package.

Beside the package, not in it (like ``testkit/``), so not in the wheel: what a study measured is in
``benchmarks/``; what ships is in ``agentic_rag/``.
"""
