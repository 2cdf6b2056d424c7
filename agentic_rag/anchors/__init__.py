"""Anchors: the pieces of a question its evidence must contain.

``predictor`` proposes them from the question (``candidates``: regexes and the lexicon; ``ner``:
spaCy), ``matching`` holds the ``Anchor`` type, every period and date pattern and whether a text
mentions an anchor, ``kind`` tells the question's kind, ``inputs`` refuses a question before any of
this, and ``node`` is the graph node.
"""
