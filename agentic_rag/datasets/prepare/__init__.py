"""Converters from public QA sets to CRAG's JSON-lines format.

Every other command reads one format: a file of :class:`~agentic_rag.datasets.crag.CragRecord` lines. The
functions here turn the CRAG distribution itself (filtered and sampled) and seven other evaluation sets
(SQuAD 2.0, RGB, Natural Questions open, HotpotQA, and the families no decision was fitted on, kept to
validate one on: SubjQA reviews, QuAIL stories and news, PubMedQA abstracts) into that format. Each
returns ``(output path(s), stats)`` where ``stats`` is a small JSON-friendly dict of counts.

* Deterministic: the same input and ``seed`` give byte-identical output. Samples are drawn with
  ``random.Random(seed)`` and every per-question choice (distractor paragraphs, shuffles) uses its own
  generator seeded from ``(seed, source, question id)``, so a question's pages do not depend on which other
  questions were sampled.
* Nothing is dropped silently: a line that is not JSON, or lacks what a record needs, is reported with its
  file and line number as a :class:`~agentic_rag.datasets.crag.BadRecord` in the caller's
  :class:`~agentic_rag.datasets.crag.ReadReport` (``on_bad='skip'``) or raised as
  :class:`~agentic_rag.datasets.crag.DataError` (``on_bad='fail'``). The number of bad lines is in the stats.
* Extra fields (allowed by ``CragRecord``): ``source`` (the data set), ``source_id`` (its own id),
  ``gold_page_urls`` (the ``page_url`` of the pages that answer: SQuAD's own paragraph, NQ's gold passage,
  RGB's positive snippets, HotpotQA's supporting paragraphs, the one page of SubjQA, QuAIL and PubMedQA; empty
  when nothing answers), RGB's and HotpotQA's ``variant``, RGB's ``fake_answer``, HotpotQA's
  ``removed_paragraph`` and ``layout`` (its evidence laid out other than as ten pages), SubjQA's ``subjective``
  and ``annotators``.
* SubjQA, QuAIL and PubMedQA take ``split`` (dev, test or all): a half by a hash of each question's own id,
  as HotpotQA's, so a question's half never depends on which other rows the file holds.
"""

from agentic_rag.datasets.prepare.crag import normalise_split, prepare_crag
from agentic_rag.datasets.prepare.hotpotqa import prepare_hotpotqa
from agentic_rag.datasets.prepare.nq import prepare_nq
from agentic_rag.datasets.prepare.pubmedqa import prepare_pubmedqa
from agentic_rag.datasets.prepare.quail import prepare_quail
from agentic_rag.datasets.prepare.rgb import prepare_rgb
from agentic_rag.datasets.prepare.squad2 import prepare_squad2
from agentic_rag.datasets.prepare.subjqa import prepare_subjqa

__all__ = ["normalise_split", "prepare_crag", "prepare_hotpotqa", "prepare_nq", "prepare_pubmedqa", "prepare_quail",
           "prepare_rgb", "prepare_squad2", "prepare_subjqa"]
