"""Models a test builds in seconds, so that loading and training code runs for real without the packaged weights."""

from __future__ import annotations

from pathlib import Path

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "ran", "a", "is",
         "where", "did", "who", "?"]


def tiny_bert(folder: Path) -> Path:
    """A two-layer BERT with a vocabulary of a few words (the MiniLM reader's shape in miniature)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    BertTokenizerFast(vocab={w: i for i, w in enumerate(VOCAB)}).save_pretrained(folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=64)).save_pretrained(folder)
    return folder


def cat_rows(n: int) -> list[dict]:
    """Reader pairs: answerable when the sources say where the cat sat; the unanswerable ones talk about a dog."""
    rows = []
    for i in range(n):
        answerable = i % 2 == 0
        rows.append({"id": f"q{i}", "question": "where did the cat sit ?", "label": int(answerable), "group": f"g{i % 6}",
                     "source": "a" if i % 3 else "b",
                     "sources": "the cat sat on the mat" if answerable else "a dog ran on the mat"})
    return rows


def tiny_causal_lm(width: int = 128):
    """A two-layer Qwen2 decoder with random weights, its linear layers ``width`` wide (a multiple of the
    int4 group of 128), and the token ids its end of turn is; no tokenizer is needed to decode ids."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=256, hidden_size=width, intermediate_size=2 * width, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, eos_token_id=255)
    return Qwen2ForCausalLM(config).eval()
