"""Fine-tuning the cross-encoder reader (reader/cross_encoder.py reads what this writes), run by
`agentic-rag train reader`, on a GPU where one is lent and on the CPU otherwise.

Rows are (question, the answer prompt's sources, 1 = they answer it), each with its group (article or
question, so a question's variants and an article's questions share a fold) and its source set. The
AUC that chooses anything is out-of-fold, grouped; a test split never reaches this module.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import numpy as np

from agentic_rag.eval.metrics import auc
from agentic_rag.reader.cross_encoder import build_model, tokenize, trainable_names
from agentic_rag.training.fitting import grouped_folds


def fine_tune(rows: Sequence[dict[str, Any]], base_dir: str, top_layers: int = 2, epochs: int = 3,
              lr: float = 5e-5, head_lr: float = 1e-3, batch_size: int = 16, device: str = "cpu",
              seed: int = 0, progress: bool = False):
    """The network fine-tuned on ``rows``: only the top ``top_layers`` encoder layers and the head learn."""
    import torch
    from transformers import AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    model = build_model(base_dir).to(device)
    names = set(trainable_names(model, top_layers))
    for name, param in model.named_parameters():
        param.requires_grad = name in names
    body = [p for n, p in model.named_parameters() if n in names and not n.startswith("head.")]
    optimizer = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": model.head.parameters(), "lr": head_lr}],
                                  weight_decay=0.01)
    order = list(range(len(rows)))
    steps = epochs * ((len(rows) + batch_size - 1) // batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1.0 - step / max(steps, 1)))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(seed)
    model.train()
    for epoch in range(epochs):
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), batch_size):
            chunk = [rows[i] for i in order[start:start + batch_size]]
            batch = tokenize(tokenizer, [r["question"] for r in chunk], [r["sources"] for r in chunk]).to(device)
            target = torch.tensor([float(r["label"]) for r in chunk], device=device)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
                logits = model(**batch)
            loss = loss_fn(logits.float(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += float(loss.detach()) * len(chunk)
        if progress:
            print(f"  epoch {epoch + 1}/{epochs}: loss {total / max(len(rows), 1):.4f}", flush=True)
    model.eval()
    return model, tokenizer, sorted(names)


def predict(model: Any, tokenizer: Any, rows: Sequence[dict[str, Any]], device: str = "cpu", batch_size: int = 64) -> np.ndarray:
    import torch

    out = []
    with torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            batch = tokenize(tokenizer, [r["question"] for r in chunk], [r["sources"] for r in chunk]).to(device)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
                out.append(torch.sigmoid(model(**batch).float()).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def cross_validated(rows: Sequence[dict[str, Any]], base_dir: str, folds: int = 5, train_fraction: float = 1.0,
                    seed: int = 0, **fit: Any) -> np.ndarray:
    """Out-of-fold P(answerable), folds split by group; ``train_fraction`` < 1 trains each fold on a
    random share of its training rows (a learning curve)."""
    y = np.array([r["label"] for r in rows])
    oof = np.zeros(len(rows))
    rng = np.random.default_rng(seed)
    for train, test in grouped_folds(y, [r["group"] for r in rows], folds):
        if train_fraction < 1.0:
            train = rng.choice(train, int(len(train) * train_fraction), replace=False)
        model, tokenizer, _ = fine_tune([rows[i] for i in train], base_dir, seed=seed, **fit)
        oof[test] = predict(model, tokenizer, [rows[i] for i in test], fit.get("device", "cpu"))
    return oof


def auc_by_source(rows: Sequence[dict[str, Any]], scores: np.ndarray) -> dict[str, float | None]:
    """AUC within each source set that holds both classes, and over all rows."""
    y = np.array([r["label"] for r in rows])
    sources = np.array([r["source"] for r in rows])
    table = {"all": auc(y, scores)}
    for src in sorted(set(sources)):
        m = sources == src
        table[str(src)] = auc(y[m], scores[m])
    return {k: (None if np.isnan(v) else round(float(v), 4)) for k, v in table.items()}
