"""Where the answerability readers and the fitted decision are trained, apart from the graph that reads them.

The graph only applies what this room writes (a probe file under ``data/probes/``, a decision file under
``data/decisions/``): ``agentic-rag train`` is its command. It sits with the tools, above the roles,
because building a training row means running the agent's own steps on a record (``prompts.py``).
"""
