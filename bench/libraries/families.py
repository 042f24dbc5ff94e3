"""Tiny causal language models of many transformers families, from their config classes:
random weights, nothing downloaded. What a family is called with is what its users write:
``model(input_ids=ids, labels=ids)``.

:func:`causal_lm` sets the sizes every decoder has (width, depth, heads, vocabulary) under
the names transformers maps them to (``hidden_size`` is GPT-2's ``n_embd``, MPT's
``d_model``), so no family is named in the code that builds it.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from torch import nn  # noqa: E402

__all__ = ["FAMILIES", "SEQ2SEQ", "causal_lm", "seq2seq"]

#: transformers model types with a causal language model, each built by :func:`causal_lm`.
FAMILIES = ("bloom", "codegen", "cohere", "falcon", "gemma", "gemma2", "gemma3_text",
            "gpt2", "gpt_bigcode", "gpt_neox", "gptj", "granite", "helium", "llama",
            "mistral", "mpt", "olmo", "olmo2", "opt", "phi", "phi3", "qwen2", "qwen3",
            "stablelm", "starcoder2")


def causal_lm(family: str, *, vocab: int = 1000, width: int = 64, layers: int = 2,
              heads: int = 4, kv_heads: int = 2, seq: int = 64, **extra: Any) -> nn.Module:
    """A ``*ForCausalLM`` of ``family`` (a transformers model type) at these sizes, with
    dropout off (so that two steps compare) and eager attention; ``extra`` overrides
    config fields."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cls = type(AutoConfig.for_model(family))
    mapping = getattr(cls, "attribute_map", {})
    sizes = {"hidden_size": width, "num_hidden_layers": layers, "num_attention_heads": heads,
             "num_key_value_heads": kv_heads, "intermediate_size": 2 * width,
             "vocab_size": vocab, "max_position_embeddings": seq, "head_dim": width // heads,
             "ffn_dim": 2 * width, "n_inner": 2 * width, "rotary_dim": width // heads // 2,
             "n_positions": seq, "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0}
    kwargs = {mapping.get(k, k): v for k, v in sizes.items()
              if not isinstance(getattr(cls, mapping.get(k, k), None), property)}
    for name in ("dropout", "attention_dropout", "hidden_dropout", "resid_pdrop",
                 "embd_pdrop", "attn_pdrop", "hidden_dropout_prob",
                 "attention_probs_dropout_prob", "attn_dropout", "resid_dropout",
                 "embedding_dropout", "emb_pdrop", "summary_first_dropout"):
        kwargs[name] = 0.0
    kwargs.update(extra)
    cfg = cls(**kwargs)
    model: nn.Module = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    return model.train()


#: transformers model types with a sequence-to-sequence language model, each built by
#: :func:`seq2seq`.
SEQ2SEQ = ("t5", "bart", "pegasus", "marian")


def seq2seq(family: str, *, vocab: int = 1000, width: int = 64, layers: int = 2,
            heads: int = 4, positions: int = 256) -> nn.Module:
    """An ``AutoModelForSeq2SeqLM`` of ``family`` with ``layers`` encoder and as many
    decoder layers, dropout off; the sizes are given under every name the families use
    (T5's ``num_layers``, BART's ``encoder_layers``: a config keeps the others unused)."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    cls = type(AutoConfig.for_model(family))
    sizes = {"vocab_size": vocab, "d_model": width, "d_kv": width // heads, "d_ff": 2 * width,
             "num_layers": layers, "num_decoder_layers": layers, "num_heads": heads,
             "encoder_layers": layers, "decoder_layers": layers,
             "encoder_attention_heads": heads, "decoder_attention_heads": heads,
             "encoder_ffn_dim": 2 * width, "decoder_ffn_dim": 2 * width,
             "max_position_embeddings": positions, "pad_token_id": 1, "bos_token_id": 0,
             "eos_token_id": 2, "decoder_start_token_id": 2}
    for name in ("dropout", "dropout_rate", "attention_dropout", "activation_dropout"):
        sizes[name] = 0.0
    model: nn.Module = AutoModelForSeq2SeqLM.from_config(cls(**sizes),
                                                         attn_implementation="eager")
    return model.train()
