"""Fewer bytes per weight: is the packaged model faster on this host with its weights in 8 or 4 bits, with the
same answers and the same reader reading? Each weight format loads the one converted folder, quantizes its
linear layers in place with torchao (the engine computes on the quantized weights: int8 or int4 matrix
products, or a dequantize fused into one), and answers the same answer prompts greedily. The reference is
the dtype ``LLM_DTYPE=auto`` picks here, so a row reads "faster than what the agent runs today".

Decoding one token reads every weight once, so fewer bytes per weight can only help the decode; a prefill of
a few hundred tokens is bound by arithmetic, which a weight-only format does not lessen.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

# name: (activation dtype, torchao config); None for the dtype's plain weights
FORMATS: dict[str, tuple[str, str | None]] = {
    "bfloat16": ("bfloat16", None),
    "float32": ("float32", None),
    "int8 weight-only": ("float32", "int8_weight_only"),
    "int8 weights and activations": ("float32", "int8_dynamic"),
    "int4 weight-only": ("bfloat16", "int4_weight_only"),  # torchao's CPU int4 kernel (tinygemm) wants bfloat16
}


def quantize(model: Any, config: str) -> None:
    """Quantize a model's linear layers in place with torchao, by a config name of ``FORMATS``."""
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_

    if config == "int4_weight_only":
        from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig

        quantize_(model, PrototypeInt4WeightOnlyConfig(group_size=128))
    else:
        quantize_(model, {"int8_weight_only": Int8WeightOnlyConfig, "int8_dynamic": Int8DynamicActivationInt8WeightConfig}[config]())


def weight_bytes(model: Any) -> int:
    """Bytes the model's parameters and buffers hold, quantized tensors counted as they are stored."""
    import torch

    def nbytes(t: torch.Tensor) -> int:
        inner = getattr(t, "__tensor_flatten__", None)
        if inner is not None:  # a torchao tensor subclass: the sum of the tensors it is made of
            names, _ = inner()
            return sum(nbytes(getattr(t, n)) for n in names)
        return t.numel() * t.element_size()

    seen = {id(p): p for p in [*model.parameters(), *model.buffers()]}
    return sum(nbytes(t) for t in seen.values())


def decode_prompts(model: Any, stops: set[int], prompts: list[list[int]], new_tokens: int, layer: int) -> dict[str, Any]:
    """Per prompt: the prefill's seconds (its last position's state at ``layer`` kept), the greedy reply to its
    first end of turn and the seconds of its decode, one forward pass per token after the prefill."""
    import torch

    rows = []
    with torch.inference_mode():
        model(torch.tensor([prompts[0][:32]]), logits_to_keep=1)  # warm-up: the first call builds the kernels
        for ids in prompts:
            start = time.perf_counter()
            out = model(torch.tensor([ids]), output_hidden_states=True, use_cache=True, logits_to_keep=1)
            prefill_s = time.perf_counter() - start
            state = out.hidden_states[layer][0, -1].float().tolist()
            cache, token, reply = out.cache, int(out.logits[0, -1].argmax()), []
            start = time.perf_counter()
            while True:
                reply.append(token)
                if token in stops or len(reply) >= new_tokens:
                    break
                out = model(torch.tensor([[token]]), cache=cache, use_cache=True)
                cache, token = out.cache, int(out.logits[0, -1].argmax())
            decode_s = time.perf_counter() - start
            rows.append({"prompt_tokens": len(ids), "prefill_s": prefill_s, "reply": reply, "decode_s": decode_s,
                         "state": state})
    return {"rows": rows}


def compare_formats(load: Callable[[str], Any], reference_dtype: str, prompts: list[list[int]], new_tokens: int,
                    layer: int, read: Callable[[list[float]], float], formats: tuple[str, ...] = tuple(FORMATS)) -> dict[str, Any]:
    """Every format of ``formats`` against the plain weights in ``reference_dtype`` (``load(dtype)`` gives a
    model), on the same prompts: seconds of prefill and of decode, the bytes of the weights, replies equal to
    the reference's, and the reader's reading (``read`` of the state at ``layer``) beside the reference's. A
    format that fails to quantize or to run here is a row that says why."""
    from agentic_rag.llm.local import end_of_turn_ids

    def measured(name: str, dtype: str, config: str | None) -> dict[str, Any]:
        model = load(dtype)
        try:
            if config is not None:
                quantize(model, config)
            result = decode_prompts(model, end_of_turn_ids(model), prompts, new_tokens, layer)
            result["weight_bytes"] = weight_bytes(model)
        except Exception as exc:  # noqa: BLE001 - a format this torch or torchao cannot run here is a finding
            result = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
        del model
        gc.collect()
        return {"format": name, "dtype": dtype, **result}

    reference = measured(f"{reference_dtype} (reference)", reference_dtype, None)
    rows = [reference] + [measured(name, *FORMATS[name]) for name in formats if FORMATS[name] != (reference_dtype, None)]
    reference_s = sum(r["prefill_s"] + r["decode_s"] for r in reference["rows"])
    for row in rows:
        if "rows" not in row:
            continue
        pairs = list(zip(row["rows"], reference["rows"]))
        prefill, decode = sum(r["prefill_s"] for r in row["rows"]), sum(r["decode_s"] for r in row["rows"])
        tokens = sum(len(r["reply"]) for r in row["rows"]) - len(row["rows"])  # the first comes with the prefill
        gaps = [abs(read(r["state"]) - read(ref["state"])) for r, ref in pairs]
        row.update({"prefill_s": round(prefill, 2), "decode_s": round(decode, 2),
                    "decode_tokens_per_s": round(tokens / decode, 2) if decode else None,
                    "seconds": round(prefill + decode, 2),
                    "speedup": round(reference_s / (prefill + decode), 2),
                    "same_reply": sum(r["reply"] == ref["reply"] for r, ref in pairs),
                    "largest_reading_gap": round(max(gaps), 4),
                    "reply_tokens": [len(r["reply"]) for r in row["rows"]]})
    for row in rows:
        for r in row.get("rows", []):
            del r["state"]
    return {"prompts": len(prompts), "prompt_tokens": [len(p) for p in prompts], "new_tokens": new_tokens,
            "layer": layer, "formats": rows}


def quantization_markdown(report: dict[str, Any]) -> str:
    lines = [f"# Fewer bytes per weight: {report['model']}\n",
             f"Generated by `{report['command']}` on {report['host']}. {report['prompts']} answer prompts of the agent "
             f"({', '.join(map(str, report['prompt_tokens']))} tokens), each answered greedily to its end of turn (at most "
             f"{report['new_tokens']} tokens), one forward pass per token; the reference is {report['dtype']} "
             f"(`LLM_DTYPE=auto` here). Weights quantized in place by torchao {report['torchao']} on torch "
             f"{report['torch']}. Reading: the packaged reader's P(answerable) from the prefill's state at layer "
             f"{report['layer']} (its last-token member).", "",
             "| weights | computes in | weight GB | prefill s | decode s | decode tokens / s | seconds | speed-up | same reply "
             "| largest reading gap |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["formats"]:
        if "error" in row:
            lines.append(f"| {row['format']} | {row['dtype']} | - | - | - | - | - | - | - | fails here: {row['error']} |")
            continue
        lines.append(f"| {row['format']} | {row['dtype']} | {row['weight_bytes'] / 1e9:.2f} | {row['prefill_s']} | {row['decode_s']} | "
                     f"{row['decode_tokens_per_s']} | {row['seconds']} | {row['speedup']}x | "
                     f"{row['same_reply']} of {report['prompts']} | {row['largest_reading_gap']} |")
    return "\n".join(lines) + "\n"
