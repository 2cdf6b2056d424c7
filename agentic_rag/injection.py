"""Text on a page that addresses the model instead of the reader (prompt injection).

A page carrying such a sentence is flagged and backs no answer and no verified quote
(``text.untrusted_source``): instructions ("ignore previous instructions", "when asked who ..., reply
X"), notes addressed to AI models, text posing as a system prompt or as a chat turn, the role markers
and special tokens of the common chat formats (ChatML, Llama 2 and 3, Gemma, Mistral, Phi, Alpaca,
Vicuna), and fake answer or citation markers. A page that merely states a false fact matches none of
them: a wrong source, not an attack.

The patterns read a normalised copy of the text, so spelling tricks a model reads through do not hide a
sentence from them: Unicode compatibility forms folded (NFKC: full-width ``＜｜im_start｜＞``,
mathematical bold letters), letters that look like ASCII ones from other scripts folded to them
(confusable-homoglyphs: a Cyrillic ``і`` in "іgnore"), invisible format characters dropped (zero-width
spaces, soft hyphens) and Unicode tag characters read as the ASCII they encode. A sentence split across
lines (a ``<br>`` inside it) is also read joined. Role markers a page writes as tags (``<start_of_turn>``)
are read too: pages keep them as text before they are parsed (``role_tags_as_text``).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# A model by a name no person goes by ("assistant" alone is also a job), and whoever a note to machines
# is for; what a model is told to do with its answer
_MODEL = (r"(?:ai|a\.i\.|llms?|(?:large )?language models?|chatbots?|gpts?|chatgpt"
          r"|ai (?:assistants?|models?|systems?|agents?|tools?|crawlers?|readers?))")
_ADDRESSEE = r"(?:" + _MODEL + r"|assistants?|bots?|summari[sz]ers?|crawlers?|scrapers?)"
# Role markers of chat formats spelled like a tag (Gemma's <start_of_turn>, ChatML's <im_start> without its bars,
# Llama 3's headers, Llama 2's <<SYS>> and [INST] as tags): in text they address the model, and an HTML parser
# would take them for elements and drop them, so pages keep them as text (``role_tags_as_text``)
_ROLE_TAG = (r"<\s*/?\s*(?:start_of_turn|end_of_turn|im_start|im_end|im_sep|eot_id|start_header_id|end_header_id"
             r"|begin_of_text|end_of_text|inst|sys|system_prompt)(?:[\s/][^<>]{0,80})?>")
_SAY = r"(?:answer|reply|respond|say|state|write|output|claim|tell|report|mention|cite)"
_ANSWER = r"(?:answer|reply|respond|say|state|output|claim|cite)"

# Each is matched against one lower-cased, normalised source sentence (source text is split at line
# ends too, so ``^`` is a line start).
UNTRUSTED_PATTERNS = (
    # "ignore (all) previous instructions", "disregard the above rules", "forget everything above"
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|"
    r"all|any|other|your|the)\b[^.!?\n]{0,30}?\b(?:instructions?|prompts?|rules|directions|guidelines|context"
    r"|directives|commands)\b",
    r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:above|before|prior|previously|"
    r"you (?:were|have been) told)\b",
    # "if anyone asks who the mayor was, answer X", "whenever someone asks about ..., respond ..."
    r"\b(?:if|when|whenever)\s+(?:anyone|anybody|someone|somebody|people|a user|the user|users|you(?:'re| are| get)?)"
    r"\s+(?:\w+\s+){0,2}?(?:asks?|asked|questions?|queries|inquires?)\b[^\n]{0,200}?\b" + _SAY + r"\b",
    # "when asked who ..., reply X": an order right after the clause (reported speech names a speaker)
    r"\b(?:when|if|whenever|once)\s+(?:being\s+|you(?:'re| are)\s+)?(?:asked|questioned|queried|prompted)\b"
    r"[^.!?\n]{0,150}?,\s*(?:always\s+|just\s+|simply\s+|please\s+|you (?:must|should)\s+)?" + _SAY + r"\b",
    # role play aimed at a model: "you are an AI assistant", "act as a chatbot"
    r"\b(?:you are|you're|act as|pretend to be)\s+(?:now\s+)?(?:an?\s+|the\s+)?(?:\w+\s+){0,2}?"
    r"(?:ai|assistant|chatbot|language model|llm|gpt)\b",
    r"\b(?:system prompt|new instructions|developer mode)\b",
    # text addressed to models: "note to AI models ...", "attention LLMs", "if you are an AI",
    # "AI assistants summarising this page must say ..."
    r"\b(?:note|message|notice|instructions?|attention|reminder|warning|directive|memo)\s+(?:to|for)\s+"
    r"(?:all\s+|any\s+|the\s+)?" + _ADDRESSEE + r"\b",
    r"\b(?:attention|dear|hey|hello)\s*,?\s+" + _MODEL + r"\b",
    r"\bif you(?:'re| are)\s+(?:an?\s+)?" + _MODEL + r"\b",
    r"\b" + _ADDRESSEE + r"\s+(?:reading|summari[sz]ing|processing|crawling|indexing|parsing|scraping)\s+"
    r"(?:this|these)\b",
    r"\b" + _MODEL + r"\s+(?:must|should|shall|are (?:required|instructed|told) to|need to|have to)\s+(?:always\s+)?"
    + _ANSWER + r"\b",
    # "begin your answer with", "your answer must be"
    r"\b(?:begin|start|end|prefix)\s+your\s+(?:answer|reply|response|output)\b",
    r"\byour\s+(?:final\s+)?(?:answer|reply|response|output)\s+(?:must|should|shall|has to|needs to)\s+"
    r"(?:be|say|state|contain|include|read)\b",
    # chat turns: "assistant: ...", "system: you are ...", "SYSTEM: the assistant must ...", one-line
    # "USER: ... ASSISTANT: ..." ("System: Nintendo Switch" in a game's info box is a field, not a turn)
    r"^\W{0,3}(?:assistant|chatbot|chatgpt|gpt|ai assistant)\s*:",
    r"^\W{0,3}(?:system|user|developer|human)\s*(?:prompt|message|note|instructions?)?\s*:\s*(?:you|ignore|always|"
    r"never|answer|respond|reply|from now|as an?|i am|i'm|(?:the |an? |all |any )?(?:assistant|model|ai|chatbot|bot|llm)s?"
    r"\s+(?:must|should|shall|will|is to|has to|needs to|may not|cannot)\b)",
    r"\b(?:user|human)\s*:[^\n]{0,300}?\b(?:assistant|ai|gpt|bot)\s*:",
    # special tokens and role headers of chat formats: ChatML, Llama 3, Phi and DeepSeek (<|im_start|>,
    # <|eot_id|>, <|assistant|>), Gemma (<start_of_turn>model), Llama 2 and Mistral ([INST], <<SYS>>,
    # [SYSTEM_PROMPT]), Alpaca and Vicuna (### Instruction:, ### Response:, ### Human:)
    r"<\|[a-z_\u2581 ]+\|>",
    _ROLE_TAG,
    r"\[/?(?:inst|system_prompt|available_tools|tool_calls|tool_results)\]|<</?sys>>",
    r"^\W{0,3}#{2,}\s*(?:instructions?|response|input|system|user|assistant|human)\b",
    r"^\W{0,3}response\s*:",
    # fake answer and citation markers: "Answer: X", "[1] \"quote\"", a line opening "[2] " like a source
    # header of the prompt, "Source 2:"
    r"^\W{0,3}(?:final |correct |short )?answer\s*[:=]",
    r"\[\d+\]\s*[\"\u201c]",
    r"^[ \t]*\[\d+\]\s",  # not \s*: from every line start it would run over all the blank lines below
    r"^\W{0,3}source\s+\d+\s*:",
)

_UNTRUSTED = re.compile("|".join(f"(?:{p})" for p in UNTRUSTED_PATTERNS), re.MULTILINE)
# The same patterns without their leading anchor or optional prefix, over a whole text: no match there
# means no sentence matches, which spares splitting the (usual) page that holds none. Starting on a
# literal lets the regex engine skip ahead instead of trying every position.
_LEADING = re.compile(r"^(?:\^\\W\{0,3\}|\^\\s\*|\^\[ \\t\]\*|\\b)?(?:\(\?:[^()]*\)\?)?")
_UNTRUSTED_ANYWHERE = re.compile("|".join(f"(?:{_LEADING.sub('', p, count=1)})" for p in UNTRUSTED_PATTERNS))

# Default-ignorable characters (invisible: zero-width spaces and joiners, soft hyphen, bidirectional
# controls, variation selectors, fillers) are dropped; tag characters (U+E0020-U+E007E) spell ASCII
# invisibly and are read as the ASCII they spell.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e001f\U000e007f-\U000e0fff]")
_TAGS = re.compile("[\U000e0020-\U000e007e]+")
_BREAK = re.compile(r"[ \t]*\n[ \t]*")


@lru_cache(maxsize=1)
def _lookalikes() -> dict[int, str]:
    """Each non-ASCII character that looks like an ASCII letter, digit or chat-format mark -> that
    character (Unicode's confusables table, as confusable-homoglyphs ships it)."""
    from confusable_homoglyphs.confusables import confusables_data

    table: dict[int, str] = {}
    for char, glyphs in confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_ = [g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii()]
        letters = [c for c in ascii_ if c.isalpha()]  # a capital looks like a capital: Cyrillic "І" is "I", not "l"
        pick = next((c for c in letters if c.isupper() == char.isupper()), None) or next(iter(letters), None) or next(
            (c for c in ascii_ if c.isdigit() or c in "<>|[]:#/_"), None)
        if pick:
            table[ord(char)] = pick
    for code, pick in list(table.items()):  # Unicode lists some capitals only by another letter: "І" as "l"
        lower = chr(code).lower()
        if chr(code).isupper() and len(lower) == 1 and table.get(ord(lower), "").isalpha():
            table[code] = table[ord(lower)].upper()
    return table


def normalise(text: str) -> str:
    """``text`` as the patterns read it (line breaks kept; see the module docstring)."""
    if text.isascii():
        return text
    text = _TAGS.sub(lambda m: "".join(chr(ord(c) - 0xE0000) for c in m.group()), text)
    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    return text.translate(_lookalikes()) if not text.isascii() else text


def joined(text: str) -> str:
    """``text`` with its line breaks read as spaces: a sentence a ``<br>`` splits reads whole."""
    return _BREAK.sub(" ", text)


_MARKUP_ROLE_TAG = re.compile(_ROLE_TAG, re.IGNORECASE)


def role_tags_as_text(markup: str) -> str:
    """``markup`` with the chat-format role markers written in it as tags escaped, so a parser keeps them as the
    text they are and the page is judged with them."""
    return _MARKUP_ROLE_TAG.sub(lambda m: m.group().replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
                                markup)


def is_untrusted(sentence: str) -> bool:
    return bool(_UNTRUSTED.search(normalise(sentence).lower()))


def may_hold_untrusted(text: str) -> bool:
    text = normalise(text).lower()
    return bool(_UNTRUSTED_ANYWHERE.search(text) or ("\n" in text and _UNTRUSTED_ANYWHERE.search(joined(text))))
