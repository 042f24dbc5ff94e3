"""Tiny randomly initialized encoder-decoders of transformers (no downloads), as their users
call them for training: ``model(input_ids=..., attention_mask=..., labels=...)``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

#: Encoder and decoder sequence lengths, batch.
SRC, TGT, BATCH = 24, 16, 2


def _bart_like(config: Any, vocab: int, width: int, layers: int) -> Any:
    return config(vocab_size=vocab, d_model=width, encoder_layers=layers,
                  decoder_layers=layers, encoder_attention_heads=4, decoder_attention_heads=4,
                  encoder_ffn_dim=2 * width, decoder_ffn_dim=2 * width,
                  max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
                  eos_token_id=2, decoder_start_token_id=2, dropout=0.0,
                  attention_dropout=0.0, activation_dropout=0.0)


def t5(vocab: int = 512, width: int = 64, layers: int = 2) -> nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(
        vocab_size=vocab, d_model=width, d_kv=width // 4, d_ff=2 * width, num_layers=layers,
        num_decoder_layers=layers, num_heads=4, dropout_rate=0.0, pad_token_id=0,
        eos_token_id=1, decoder_start_token_id=0))


def bart(vocab: int = 512, width: int = 64, layers: int = 2) -> nn.Module:
    from transformers import BartConfig, BartForConditionalGeneration

    return BartForConditionalGeneration(_bart_like(BartConfig, vocab, width, layers))


def pegasus(vocab: int = 512, width: int = 64, layers: int = 2) -> nn.Module:
    from transformers import PegasusConfig, PegasusForConditionalGeneration

    return PegasusForConditionalGeneration(_bart_like(PegasusConfig, vocab, width, layers))


def marian(vocab: int = 512, width: int = 64, layers: int = 2) -> nn.Module:
    from transformers import MarianConfig, MarianMTModel

    return MarianMTModel(_bart_like(MarianConfig, vocab, width, layers))


FAMILIES: dict[str, Callable[..., nn.Module]] = {
    "t5": t5, "bart": bart, "pegasus": pegasus, "marian": marian}


def call(vocab: int = 512, seed: int = 0) -> dict[str, torch.Tensor]:
    """A training call: source ids with left padding in one row, labels with ``-100`` at
    the padded end of one row (ignored by the loss, as a collator pads them)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (BATCH, SRC), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :5] = 0
    labels = torch.randint(3, vocab, (BATCH, TGT), generator=g)
    labels[0, -3:] = -100
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
