"""Tiny models behind the Python APIs, without training: a ``unilm_seq2seq`` checkpoint folder that
``from_pretrained`` loads, language pairs binarized in-process for the task's training data, and a
``palm_seq2seq`` hub built around a tiny PALM model."""

import dataclasses
import os

import torch
from fairseq.data import indexed_dataset
from fairseq.dataclass.configs import FairseqConfig
from omegaconf import OmegaConf

from unilm_fairseq import PALMHubInterface
from unilm_fairseq.tasks.palm_seq2seq import PALMSeq2SeqConfig, PALMSeq2SeqTask
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig

from .models import save_checkpoint

LANGS = ("src", "tgt")
CHECKPOINT = "checkpoint.pt"


def write_pairs(data_dir, split, sources, targets, dictionary):
    """``split.src-tgt.{src,tgt}`` as ``fairseq-preprocess`` writes them (mmap), from id tensors ending
    with ``</s>``; and the two dictionaries."""
    os.makedirs(data_dir, exist_ok=True)
    for lang, lines in zip(LANGS, (sources, targets)):
        prefix = os.path.join(data_dir, f"{split}.{LANGS[0]}-{LANGS[1]}.{lang}")
        builder = indexed_dataset.make_builder(
            indexed_dataset.data_file_path(prefix), impl="mmap", vocab_size=len(dictionary)
        )
        for line in lines:
            builder.add_item(torch.as_tensor(line, dtype=torch.long))
        builder.finalize(indexed_dataset.index_file_path(prefix))
        dictionary.save(os.path.join(data_dir, f"dict.{lang}.txt"))


def save_seq2seq_checkpoint(model_dir, model, max_source: int = 32, max_target: int = 16, **task_options):
    """``model_dir/checkpoint.pt``: ``model`` (a tiny ``unilmv2``) as ``fairseq-train --task unilm_seq2seq``
    saves it after fine-tuning with its ``seq2seq_method``, recording the limits; the dictionaries go
    beside it, so ``from_pretrained(model_dir, "checkpoint.pt")`` loads it with the default data path."""
    os.makedirs(model_dir, exist_ok=True)
    for lang in LANGS:
        model.encoder.dictionary.save(os.path.join(model_dir, f"dict.{lang}.txt"))
    full = FairseqConfig()
    full.model = dataclasses.replace(
        model.cfg, _name="unilmv2", seq2seq_source_positions=max_source, seq2seq_target_positions=max_target
    )
    full.task = UniLMSeq2SeqConfig(
        _name="unilm_seq2seq", data=str(model_dir), source_lang=LANGS[0], target_lang=LANGS[1],
        finetune_method=str(model.cfg.seq2seq_method), **task_options,
    )  # fmt: skip
    path = os.path.join(model_dir, CHECKPOINT)
    save_checkpoint(model.state_dict(), path)
    state = torch.load(path, weights_only=False)
    state["cfg"] = OmegaConf.to_container(OmegaConf.structured(full), resolve=True, enum_to_str=True)
    torch.save(state, path)
    return path


def palm_task(dictionary, data_dir="unused"):
    cfg = PALMSeq2SeqConfig(
        data=str(data_dir), source_lang=LANGS[0], target_lang=LANGS[1], dataset_impl="mmap",
        required_seq_len_multiple=1,
    )  # fmt: skip
    return PALMSeq2SeqTask(cfg, dictionary, dictionary)


def palm_hub(model, task) -> PALMHubInterface:
    """The interface ``PALMHubInterface.from_pretrained`` returns, around ``model`` and ``task``
    (fairseq's default configuration: no tokenizer, no bpe)."""
    return PALMHubInterface(OmegaConf.structured(FairseqConfig()), task, [model])
