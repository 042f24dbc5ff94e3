"""Models as they come from HuggingFace transformers, torchvision and timm: tiny configs,
random weights, CPU, nothing downloaded (HF_HUB_OFFLINE is set before transformers loads).

Each builder returns a :class:`Library` case: the model, the training call as the library's
users write it (keywords for transformers, with ``labels=`` where the model computes its
loss) and the loss the training loop takes from the output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

__all__ = ["LIBRARIES", "Library"]

VOCAB, SEQ, BATCH = 128, 16, 2


@dataclass
class Library:
    """A library model and how a training loop calls it."""

    model: nn.Module
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    loss: Callable[[Any], torch.Tensor] = lambda out: out.loss

    def call(self, net: nn.Module) -> Any:
        return net(*self.args, **self.kwargs)


def _ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, SEQ))


def gpt2() -> Library:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=64,
                     bos_token_id=0, eos_token_id=0)
    ids = _ids()
    return Library(GPT2LMHeadModel(cfg), kwargs={"input_ids": ids, "labels": ids})


def llama() -> Library:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                      num_attention_heads=2, num_key_value_heads=2, vocab_size=VOCAB,
                      max_position_embeddings=64, bos_token_id=0, eos_token_id=0)
    ids = _ids()
    return Library(LlamaForCausalLM(cfg), kwargs={"input_ids": ids, "labels": ids})


def qwen2() -> Library:
    """Grouped-query attention (one key/value head for two query heads), biased q/k/v."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                      num_attention_heads=2, num_key_value_heads=1, vocab_size=VOCAB,
                      max_position_embeddings=64, bos_token_id=0, eos_token_id=0)
    ids = _ids()
    return Library(Qwen2ForCausalLM(cfg), kwargs={"input_ids": ids, "labels": ids})


def bert() -> Library:
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                     num_attention_heads=2, vocab_size=VOCAB, max_position_embeddings=64,
                     num_labels=3)
    ids = _ids()
    mask = torch.ones_like(ids)
    mask[0, -4:] = 0  # a padded sequence
    return Library(BertForSequenceClassification(cfg),
                   kwargs={"input_ids": ids, "attention_mask": mask,
                           "labels": torch.randint(0, 3, (BATCH,))})


def _images() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(BATCH, 3, 32, 32), torch.randint(0, 10, (BATCH,))


def resnet18() -> Library:
    from torchvision.models import resnet18 as build

    x, y = _images()
    return Library(build(num_classes=10), (x,), loss=lambda out: F.cross_entropy(out, y))


def mobilenet() -> Library:
    from torchvision.models import mobilenet_v3_small

    x, y = _images()
    return Library(mobilenet_v3_small(num_classes=10), (x,),
                   loss=lambda out: F.cross_entropy(out, y))


def vit() -> Library:
    import timm

    x, y = _images()
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32,
                              patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10)
    return Library(model, (x,), loss=lambda out: F.cross_entropy(out, y))


LIBRARIES: dict[str, Callable[[], Library]] = {
    "gpt2": gpt2, "llama": llama, "qwen2": qwen2, "bert": bert,
    "resnet18": resnet18, "mobilenet": mobilenet, "vit": vit,
}
