"""A LangChain chat model that runs a transformers checkpoint in this process.

Why not a server: the whole system must work offline on a laptop CPU with nothing else running, and
in-process generation lets us count tokens with the model's own tokenizer, so budgets and telemetry
are exact rather than estimated.

The dtype is chosen by the processor (llm/dtype.py): bfloat16 where it is computed natively, float32
where it would be emulated.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal

import torch
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr, model_validator
from transformers import LogitsProcessor, StoppingCriteria

from agentic_rag import usable_cpus
from agentic_rag.budget import current_deadline, hard_deadline, stop_modules_at_deadline
from agentic_rag.llm.dtype import choose_dtype
from agentic_rag.llm.packaged import converted_source_key
from agentic_rag.timing import startup_step

_LOAD_LOCK = threading.Lock()
_LOADED: dict[tuple[str, str], tuple[Any, Any, threading.Lock]] = {}
_TOKENIZERS: dict[str, Any] = {}


def load_tokenizer(path: str | Path) -> Any:
    """One tokenizer per folder per process, shared by the chat model and context-token counting."""
    from transformers import AutoTokenizer

    key = str(Path(path).resolve())
    with _LOAD_LOCK:
        if key not in _TOKENIZERS:
            with startup_step("tokenizer load"):
                _TOKENIZERS[key] = AutoTokenizer.from_pretrained(key)
        return _TOKENIZERS[key]


def _load(path: str, dtype: str) -> tuple[Any, Any, threading.Lock]:
    """Weights are loaded once per (folder, dtype): graphs build many chat-model objects, and each
    load would cost seconds and another GB of RAM. The lock serialises generation on one model,
    since concurrent generate() calls on a CPU only fight over the same cores."""
    from transformers import AutoModelForCausalLM

    key = (str(Path(path).resolve()), dtype)
    tokenizer = load_tokenizer(key[0])
    with _LOAD_LOCK:
        if key not in _LOADED:
            with startup_step("LLM load"):
                model = AutoModelForCausalLM.from_pretrained(key[0], dtype=getattr(torch, dtype))
            model.eval()
            # Every decoder block checks the question's hard deadline first, so a prefill and each
            # decoding step stop between two blocks (DeadlineExceeded) once it passes.
            stop_modules_at_deadline(model.get_decoder().layers, "local model forward pass")
            _LOADED[key] = (model, tokenizer, threading.Lock())
        return _LOADED[key]


def end_of_turn_ids(model: Any) -> set[int]:
    """The token ids that end a reply of a loaded model: its generation config names one or a list."""
    eos = model.generation_config.eos_token_id
    return set(eos if isinstance(eos, list) else [eos]) - {None}


def hidden_size_of(model: "ChatLocalTransformers") -> int:
    return int(_load(model.model_path, model.dtype)[0].config.hidden_size)


_ROLES = {SystemMessage: "system", HumanMessage: "user", AIMessage: "assistant"}


def _to_chat(messages: list[BaseMessage]) -> list[dict[str, str]]:
    out = []
    for message in messages:
        role = message.role if isinstance(message, ChatMessage) else _ROLES.get(type(message))
        if role is None:
            raise ValueError(f"ChatLocalTransformers cannot send a {type(message).__name__} to the model")
        out.append({"role": role, "content": message.text})
    return out


class _StopOnStrings(StoppingCriteria):
    """Stop once the decoded reply contains a stop string.

    transformers' own ``stop_strings`` precomputes tables over the 151k-token vocabulary for every new
    stop set (about a second on CPU); decoding a reply of at most a few hundred tokens per step is
    far cheaper. The stop string itself is cut from the text afterwards.
    """

    def __init__(self, tokenizer: Any, stops: list[str], prompt_len: int) -> None:
        self.tokenizer, self.stops, self.prompt_len = tokenizer, list(stops), prompt_len

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        text = self.tokenizer.decode(input_ids[0, self.prompt_len :], skip_special_tokens=True)
        done = any(stop in text for stop in self.stops)
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


class _RecordLogprobs(LogitsProcessor):
    """Each generated token's log-probability, kept as decoding goes: one vocabulary-sized vector at a
    time, where ``output_scores`` would keep one per generated token until the end. It runs after the
    built-in processors, so with REPETITION_PENALTY set it reads the distribution greedy decoding picked from."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self._last: torch.Tensor | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self._last is not None:  # the token just appended was chosen from the previous step's scores
            self.values.append(float(self._last[int(input_ids[0, -1])]))
        self._last = torch.log_softmax(scores[0].float(), dim=-1)
        return scores

    def of(self, new_ids: list[int], eos_ids: set[int]) -> list[float]:
        values = list(self.values)
        if self._last is not None and len(values) < len(new_ids):
            values.append(float(self._last[new_ids[len(values)]]))
        while new_ids and values and new_ids[len(values) - 1] in eos_ids:  # the end token is not the answer
            values.pop()
        return values


def scored_logprobs(scores: tuple[torch.Tensor, ...], new_ids: list[int], eos_ids: set[int]) -> list[float]:
    """Each generated token's log-probability from ``generate``'s per-token scores, as ``_RecordLogprobs``
    gives them (the end token is not the answer)."""
    values = [float(torch.log_softmax(s[0].float(), dim=-1)[t]) for s, t in zip(scores, new_ids)]
    while new_ids and values and new_ids[len(values) - 1] in eos_ids:
        values.pop()
    return values


# where a reply's response_metadata["prompt_state"] keeps each view of its prefill
STATE_KEYS = {"last": "state", "question": "question_state"}


def token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """The tokens whose characters fall inside [start, end) of the templated prompt text."""
    inside = [i for i, (a, b) in enumerate(offsets) if b > a >= start and b <= end]
    if not inside:
        raise ValueError(f"no token lies inside characters {start}..{end} of the prompt")
    return inside[0], inside[-1] + 1


def prompt_offsets(tokenizer: Any, text: str) -> list[tuple[int, int]]:
    """Each token's characters in a templated prompt (tokenized as ``apply_chat_template`` does)."""
    encoded = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    return [tuple(map(int, o)) for o in encoded["offset_mapping"]]


def question_tokens(text: str, offsets: list[tuple[int, int]], question: str) -> tuple[int, int]:
    """The tokens of the question in a templated answer prompt: its last occurrence, the question slot
    after the sources (a source that quotes the question comes before it). What the answerability
    reader's question view averages, at training and at answer time alike."""
    at = text.rfind(question) if question else -1
    if at < 0:
        raise ValueError("the prompt does not hold the question")
    return token_span(offsets, at, at + len(question))


@contextmanager
def _capture_prompt_state(model: Any, layer: int | None, into: dict[str, torch.Tensor],
                          question: tuple[int, int] | None = None, prompt_len: int | None = None) -> Iterator[None]:
    """Keep the last prompt token's state at ``layer`` (as in ``output_hidden_states``: 0 = the
    embeddings, L = the output of block L, the last one after the final norm) from the prefill only,
    as ``into["last"]``, and with ``question`` (its token span) the mean state over the question's
    tokens as ``into["question"]``. The last prompt token is at ``prompt_len - 1``: under speculative
    decoding the first pass holds the prompt and the tokens it proposes after it.

    A forward hook on that one module, instead of ``output_hidden_states`` in ``generate``, which
    would keep every layer's states for the whole prompt and for every decoded token.
    """
    if layer is None:
        yield
        return
    layer = int(layer)
    base = model.get_decoder()
    blocks = base.layers
    if not 0 <= layer <= len(blocks):
        raise ValueError(f"prompt_state_layer={layer} is outside 0..{len(blocks)} for this model")
    module = base.embed_tokens if layer == 0 else base.norm if layer == len(blocks) else blocks[layer - 1]

    def hook(_module: Any, _args: Any, output: Any) -> None:
        if not into:  # the first call is the prefill; later calls decode one token each
            hidden = output[0] if isinstance(output, tuple) else output
            into["last"] = hidden[0, (prompt_len or hidden.shape[1]) - 1, :].detach().clone()
            if question is not None:
                into["question"] = hidden[0, question[0]:question[1]].mean(0).detach().clone()

    handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@contextmanager
def _count_passes(model: Any, into: list[int]) -> Iterator[None]:
    """Count the model's forward passes (the prefill first): tokens decoded per pass over the weights is what
    speculative decoding buys, one on plain greedy decoding."""
    handle = model.register_forward_hook(lambda *_: into.append(1))
    try:
        yield
    finally:
        handle.remove()


class _QuietAssisted(logging.Filter):
    """Assisted generation hands this model's logits processors and generation config to the draft, and
    transformers warns of both on every call, about nothing a user can change."""

    NOISE = ("Passing `generation_config` together with generation-related arguments", "A custom logits processor of type")

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.NOISE)


logging.getLogger("transformers.generation.utils").addFilter(_QuietAssisted())

# tokens a prompt-lookup pass proposes from the prompt (transformers' prompt_lookup_num_tokens): a RAG
# answer copies the sources' words in runs, and a wrong proposal costs a little compute, not a pass
PROMPT_LOOKUP_TOKENS = 10


def _spellings(word: str) -> list[str]:
    return list(dict.fromkeys(v for w in (word.lower(), word.capitalize()) for v in (w, " " + w)))


class ChatLocalTransformers(BaseChatModel):
    """Chat with a local HF causal-LM folder (e.g. the converted packaged Qwen2.5 0.5B)."""

    model_path: str
    dtype: Literal["auto", "bfloat16", "float32"] = Field(
        "auto", description="what the weights compute in; 'auto' is resolved at load (llm/dtype.choose_dtype)")
    max_new_tokens: int = Field(160, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    threads: int = Field(0, ge=0, description="torch intra-op threads; 0 = all cores")
    repetition_penalty: float = Field(1.0, ge=1.0, description="HF repetition penalty; 1.0 = off")
    speculation: Literal["off", "prompt_lookup", "assisted"] = Field(
        "off", description="lossless speculative decoding: off, proposals looked up in the prompt, or drafted by a "
        "smaller model with the same tokenizer (draft_model_path), each batch verified in one pass")
    draft_model_path: str | None = Field(None, description="the draft model's HF folder, for speculation='assisted'")
    stop: list[str] | None = None
    _identity: str = PrivateAttr("")

    @model_validator(mode="after")
    def _load_now(self) -> "ChatLocalTransformers":
        # Load at construction so a bad path fails where it is configured, not mid-graph.
        self.model_path = str(self.model_path)
        self.dtype = choose_dtype(self.dtype).dtype
        torch.set_num_threads(self.threads or usable_cpus())
        tokenizer = _load(self.model_path, self.dtype)[1]
        if self.speculation == "assisted":
            if not self.draft_model_path:
                raise ValueError("speculation='assisted' needs draft_model_path, a smaller model with the same tokenizer")
            if Path(self.draft_model_path).resolve() == Path(self.model_path).resolve():  # one lock: it would wait on itself
                raise ValueError("speculation='assisted' needs a draft model other than the generator")
            draft_tokenizer = _load(str(self.draft_model_path), self.dtype)[1]
            if draft_tokenizer.get_vocab() != tokenizer.get_vocab():  # its proposals would be other tokens' ids
                raise ValueError(f"the draft model {self.draft_model_path} does not share {self.model_path}'s tokenizer")
        # A converted folder is known by the GGUF it came from, not by where it lies: replayed calls
        # then survive a moved folder, and another model put at a reused path is never replayed.
        self._identity = converted_source_key(Path(self.model_path)) or str(Path(self.model_path).resolve())
        return self

    @property
    def _llm_type(self) -> str:
        return "local-transformers"

    @property
    def model_name(self) -> str:
        return Path(self.model_path).name

    @property
    def tokenizer(self) -> Any:
        return load_tokenizer(self.model_path)  # the one _load pairs with the weights, without loading them

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model": self._identity,
            "dtype": self.dtype,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "repetition_penalty": self.repetition_penalty,
        }  # not speculation: under greedy decoding it gives the same tokens, so a cached reply stands

    def get_num_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        """Exact prompt size, chat-template tokens included (what the budget really pays for)."""
        ids = self.tokenizer.apply_chat_template(
            _to_chat(messages), add_generation_prompt=True, tokenize=True, return_dict=False
        )
        return len(ids)

    def _question_span(self, tokenizer: Any, messages: list[BaseMessage],
                       question: str | None) -> tuple[int, int] | None:
        """The question's tokens in the prompt ``_inputs`` gives (None without a question to locate)."""
        if not question:
            return None
        text = tokenizer.apply_chat_template(_to_chat(messages), add_generation_prompt=True, tokenize=False)
        return question_tokens(text, prompt_offsets(tokenizer, text), question)

    def prompt_ids(self, messages: list[BaseMessage]) -> list[int]:
        """The token ids a generation call's prefill reads for ``messages`` (the chat template applied)."""
        return self._inputs(messages)["input_ids"][0].tolist()

    def loaded(self) -> tuple[Any, Any]:
        """The loaded model and tokenizer this chat model decodes with (shared by every chat model on the folder)."""
        model, tokenizer, _ = _load(self.model_path, self.dtype)
        return model, tokenizer

    def _inputs(self, messages: list[BaseMessage]) -> Any:
        return self.tokenizer.apply_chat_template(
            _to_chat(messages), add_generation_prompt=True, return_tensors="pt", return_dict=True
        )

    def prompt_states(self, messages: list[BaseMessage]) -> torch.Tensor:
        """The last prompt token's hidden state at every layer, [layers + 1, hidden] float32.

        This is the same vector the generation call's prefill computes (what the answerability probe
        reads at answer time); training data for the probe is collected with this one forward pass.
        """
        model, _, gen_lock = _load(self.model_path, self.dtype)
        inputs = self._inputs(messages)
        with gen_lock, torch.inference_mode():
            out = model(**inputs, output_hidden_states=True, use_cache=False, logits_to_keep=1)
        return torch.stack([h[0, -1, :] for h in out.hidden_states]).float()

    def prompt_state(self, messages: list[BaseMessage], layer: int,
                     question: str = "") -> tuple[dict[str, list[float]], int]:
        """The prompt's states at ``layer`` from one prefill, no decoding (the last token's, and with
        ``question`` the question tokens' mean), and its length in tokens: what the answerability
        reader reads when this model is not the generator."""
        model, tokenizer, gen_lock = _load(self.model_path, self.dtype)
        inputs = self._inputs(messages)
        span = self._question_span(tokenizer, messages, question)
        captured: dict[str, torch.Tensor] = {}
        with gen_lock, torch.inference_mode(), _capture_prompt_state(model, layer, captured, span):
            model(**inputs, use_cache=False, logits_to_keep=1)
        return {k: v.float().tolist() for k, v in captured.items()}, int(inputs["input_ids"].shape[1])

    def _score_choices(self, messages: list[BaseMessage], choices: list[str]) -> ChatResult:
        """One prefill, no decoding: how the model would split its first reply token among ``choices``.

        A yes/no verdict read from the probabilities, not from one sampled word, ranks answers instead
        of only splitting them in two. Each choice's probability sums its first-token spellings
        ("yes", "Yes", " yes", ...) and the choices are renormalised among themselves. The reply text
        is the likeliest choice, so a caller that only reads text still gets a verdict.
        """
        model, tokenizer, gen_lock = _load(self.model_path, self.dtype)
        inputs = self._inputs(messages)
        with gen_lock, torch.inference_mode():
            logits = model(**inputs, use_cache=False, logits_to_keep=1).logits[0, -1].float()
        probs = torch.softmax(logits, dim=-1)
        mass = {}
        for choice in choices:
            ids = {tokenizer.encode(v, add_special_tokens=False)[0] for v in _spellings(choice)}
            mass[choice] = float(probs[sorted(ids)].sum())
        total = sum(mass.values()) or 1.0
        shares = {c: round(m / total, 6) for c, m in mass.items()}
        n_in = inputs["input_ids"].shape[1]
        usage = {"input_tokens": n_in, "output_tokens": 1, "total_tokens": n_in + 1}
        meta = {"model_name": self.model_name, "finish_reason": "stop", "choice_probs": shares}
        message = AIMessage(content=max(shares, key=shares.get), usage_metadata=usage, response_metadata=meta)
        return ChatResult(generations=[ChatGeneration(message=message)], llm_output={"token_usage": usage})

    def sample_replies(self, messages: list[BaseMessage], n: int, temperature: float, max_new_tokens: int,
                       seed: int = 0) -> tuple[list[str], dict[str, int]]:
        """``n`` sampled replies that share one prefill of the prompt, and what they cost in tokens.

        Self-consistency asks whether the model would say the same thing again; on two cores the
        prompt's prefill is the costly, compute-bound part, and a decode step for ``n`` rows reads the
        weights once, as a step for one does. So the prompt (all but its last token) is run once, its
        key-value cache repeated ``n`` times, and the rows decode together. ``seed`` makes a study
        repeatable."""
        if n < 1 or temperature <= 0:
            raise ValueError("sample_replies needs n >= 1 and a temperature above 0")
        model, tokenizer, gen_lock = _load(self.model_path, self.dtype)
        ids = self._inputs(messages)["input_ids"]
        gen_kwargs: dict[str, Any] = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0,
                                      "max_new_tokens": int(max_new_tokens)}
        if self.repetition_penalty != 1.0:
            gen_kwargs["repetition_penalty"] = self.repetition_penalty
        with gen_lock, torch.inference_mode():
            torch.manual_seed(seed)
            cache = model(input_ids=ids[:, :-1], use_cache=True).cache
            cache.batch_repeat_interleave(n)
            out = model.generate(input_ids=ids.repeat(n, 1), attention_mask=torch.ones(n, ids.shape[1], dtype=torch.long),
                                 cache=cache, **gen_kwargs)
        rows = out[:, ids.shape[1]:]
        pad = model.generation_config.pad_token_id
        ends = end_of_turn_ids(model) | ({pad} if pad is not None else set())
        lengths = [next((i + 1 for i, t in enumerate(row) if t in ends), len(row)) for row in rows.tolist()]
        texts = [tokenizer.decode(row[:k], skip_special_tokens=True).strip() for row, k in zip(rows.tolist(), lengths)]
        n_in = int(ids.shape[1])
        return texts, {"input_tokens": n_in, "output_tokens": sum(lengths), "total_tokens": n_in + sum(lengths)}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """``deadline`` (a ``time.monotonic()`` instant; default: the enclosing ``hard_deadline``) ends
        the call with DeadlineExceeded, its partial text dropped: an answer is never the clock's cut."""
        with hard_deadline(kwargs.pop("deadline", None) or current_deadline()):
            return self._generate_by_deadline(messages, stop, **kwargs)

    def _generate_by_deadline(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> ChatResult:
        model, tokenizer, gen_lock = _load(self.model_path, self.dtype)
        if kwargs.get("score_choices"):
            return self._score_choices(messages, list(kwargs["score_choices"]))
        # `max_tokens` is accepted too, so callers can bind the same kwarg as for ChatOpenAI.
        cap = kwargs.get("max_new_tokens") or kwargs.get("max_tokens") or self.max_new_tokens
        temperature = kwargs.get("temperature", self.temperature)
        stop = stop or kwargs.get("stop") or self.stop
        # `prompt_state_layer=L` returns the last prompt token's hidden state at layer L (from this
        # call's own prefill, no extra forward pass) in response_metadata["prompt_state"], and with
        # `prompt_state_question=Q` the mean state over the question's tokens beside it.
        state_layer = kwargs.get("prompt_state_layer")
        inputs = self._inputs(messages)
        asked = kwargs.get("prompt_state_question") if state_layer is not None else None
        span = self._question_span(tokenizer, messages, asked)
        gen_kwargs: dict[str, Any] = {"max_new_tokens": int(cap), "do_sample": temperature > 0}
        if self.repetition_penalty != 1.0:  # deterministic still: it reshapes logits, greedy picks the max
            gen_kwargs["repetition_penalty"] = self.repetition_penalty
        if temperature > 0:
            gen_kwargs["temperature"] = temperature
        if stop:
            gen_kwargs["stopping_criteria"] = [_StopOnStrings(tokenizer, stop, inputs["input_ids"].shape[1])]
        speculative = self.speculation != "off" and temperature == 0
        if speculative and self.speculation == "prompt_lookup":
            gen_kwargs["prompt_lookup_num_tokens"] = PROMPT_LOOKUP_TOKENS
        draft_lock: Any = nullcontext()
        if speculative and self.speculation == "assisted":  # the draft proposes, this model verifies
            # the draft's lock too: the packaged reader may be the same 0.5B, and a prefill of it capturing its
            # hidden state must not see the draft's passes
            gen_kwargs["assistant_model"], _, draft_lock = _load(str(self.draft_model_path), self.dtype)
        recorder = _RecordLogprobs() if kwargs.get("logprobs") and not speculative else None
        if recorder is not None:  # `logprobs=True`, as for ChatOpenAI: response_metadata["token_logprobs"]
            gen_kwargs["logits_processor"] = [recorder]
        elif kwargs.get("logprobs"):  # a verification pass scores several positions: the accepted tokens' scores
            gen_kwargs.update(output_scores=True, return_dict_in_generate=True)
        captured: dict[str, torch.Tensor] = {}
        passes: list[int] = []
        n_in = inputs["input_ids"].shape[1]
        with gen_lock, draft_lock, torch.inference_mode(), _capture_prompt_state(model, state_layer, captured, span, n_in), \
                _count_passes(model, passes):
            output = model.generate(**inputs, **gen_kwargs)
        scores = getattr(output, "scores", None)
        output = getattr(output, "sequences", output)
        prompt_state = {STATE_KEYS[view]: [round(v, 5) for v in t.float().tolist()] for view, t in captured.items()}
        new_ids = output[0, n_in:].tolist()
        text = tokenizer.decode(new_ids, skip_special_tokens=True)

        eos_ids = end_of_turn_ids(model)
        finish_reason = "length"
        if new_ids and new_ids[-1] in eos_ids:
            finish_reason = "stop"
        for s in stop or []:
            if s in text:
                text, finish_reason = text[: text.index(s)], "stop"
        if finish_reason == "length" and len(new_ids) < cap:
            finish_reason = "stop"

        usage = {"input_tokens": n_in, "output_tokens": len(new_ids), "total_tokens": n_in + len(new_ids)}
        meta = {"model_name": self.model_name, "finish_reason": finish_reason, "forward_passes": len(passes)}
        if recorder is not None:
            meta["token_logprobs"] = [round(v, 5) for v in recorder.of(new_ids, eos_ids)]
        elif scores is not None:
            meta["token_logprobs"] = [round(v, 5) for v in scored_logprobs(scores, new_ids, eos_ids)]
        if prompt_state:
            meta["prompt_state"] = {"layer": int(state_layer), **prompt_state}
        message = AIMessage(content=text, usage_metadata=usage, response_metadata=meta)
        return ChatResult(
            generations=[ChatGeneration(message=message, generation_info={"finish_reason": finish_reason})],
            llm_output={"model_name": self.model_name, "token_usage": usage},
        )
