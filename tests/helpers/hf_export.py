"""Tiny ``unilmv2`` checkpoints written as training writes them (with the dictionary where their task reads
it), and readers of exported directories, for the Hugging Face export tests."""

import json
import os
from typing import Dict

import torch
from fairseq.dataclass.configs import FairseqConfig
from omegaconf import OmegaConf
from torch import Tensor

from unilm_fairseq.data.dictionary import TokenListDictionary
from unilm_fairseq.tasks.pmlm import PMLMConfig
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig

from .hf import perturb_, wordpiece_tokens
from .models import make_dictionary, tiny_model

MODEL_NAME = "unilmv2"
SEQ2SEQ_LANGS = ("src", "tgt")


def wordpiece_dictionary() -> TokenListDictionary:
    """BERT-style specials ([PAD] is id 0) and word pieces, ids = positions in the list."""
    return TokenListDictionary.from_tokens(wordpiece_tokens())


def fairseq_dictionary():
    """fairseq's ``<s> <pad> </s> <unk>`` first, words, ``<mask>`` last."""
    return make_dictionary()


def perturbed_model(dictionary, seed: int = 0, **overrides):
    """A tiny ``unilmv2`` model with every weight (biases, LayerNorms, the key bias too) randomly moved away
    from its initialisation, so that each one matters in a comparison."""
    model = tiny_model(dictionary, seed=seed, **overrides)
    model.cfg._name = MODEL_NAME
    perturb_(model, seed=seed + 100)
    return model.eval()


def save_dictionary(dictionary, folder: str, task: str) -> None:
    names = ["dict.txt"] if task == "pmlm" else [f"dict.{lang}.txt" for lang in SEQ2SEQ_LANGS]
    for name in names:
        dictionary.save(os.path.join(folder, name))


def write_checkpoint(model, folder: str, task: str = "pmlm", extra_state=None, name="checkpoint.pt") -> str:
    """``folder/name``: ``model`` as ``fairseq-train --task {pmlm,unilm_seq2seq}`` saves it, its task reading
    the dictionary (also written) from ``folder``. Returns the checkpoint's path."""
    os.makedirs(folder, exist_ok=True)
    save_dictionary(model.dictionary, folder, task)
    full = FairseqConfig()
    full.model = model.cfg
    if task == "pmlm":
        full.task = PMLMConfig(_name=task, data=folder)
    else:
        full.task = UniLMSeq2SeqConfig(
            _name=task, data=folder, source_lang=SEQ2SEQ_LANGS[0], target_lang=SEQ2SEQ_LANGS[1]
        )
    path = os.path.join(folder, name)
    torch.save(
        {
            "args": None,
            "cfg": OmegaConf.to_container(OmegaConf.structured(full), resolve=True, enum_to_str=True),
            "model": model.state_dict(),
            "optimizer_history": [
                {"criterion_name": None, "optimizer_name": None, "lr_scheduler_state": {}, "num_updates": 5}
            ],
            "extra_state": extra_state or {},
            "last_optimizer_state": None,
        },
        path,
    )
    return path


def exported_tensors(out_dir: str) -> Dict[str, Tensor]:
    """The tensors of an exported directory (``model.safetensors`` or ``pytorch_model.bin``)."""
    path = os.path.join(out_dir, "model.safetensors")
    if os.path.isfile(path):
        from safetensors.torch import load_file

        return load_file(path)
    return torch.load(os.path.join(out_dir, "pytorch_model.bin"), map_location="cpu", weights_only=True)


def read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def differing_tensors(a: Dict[str, Tensor], b: Dict[str, Tensor]):
    """Keys of either that the other lacks, or whose tensors are not ``torch.equal`` (dtype included)."""
    keys = sorted(set(a) | set(b))
    return [
        k for k in keys if k not in a or k not in b or a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k])
    ]
