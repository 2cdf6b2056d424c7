"""The answerability reader: P(the evidence answers the question) for any generator (read.py), the
probe it applies (probe.py), how a probe is fitted (probe_training.py) and its graph step (node.py)."""
